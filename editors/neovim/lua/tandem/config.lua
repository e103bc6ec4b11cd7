-- tandem's defaults, and `setup(opts)` merged over them.
--
-- Everything the plugin decides is read from the table `M.merge` returns; nothing else is global.

local M = {}

---@class tandem.Keymaps
---@field accept string|false       accept the whole suggestion (falls back to the key itself)
---@field accept_word string|false  accept the next word
---@field accept_line string|false  accept up to the end of the line (and the line break)
---@field dismiss string|false      hide the suggestion (leaving insert mode hides it too)
---@field trigger string|false      ask for a suggestion now

---@class tandem.Config
---@field cmd string[]               how to start the server
---@field cmd_env table<string,string>|nil extra environment for the server
---@field root_markers string[]      files that mark a project root (first found upwards wins)
---@field filetypes string[]|nil     only these filetypes (nil: every filetype not excluded)
---@field exclude_filetypes string[] never these
---@field init_options table         sent as `initializationOptions` (tandem's config tree)
---@field settings table             sent with `workspace/didChangeConfiguration`
---@field auto_trigger boolean       ask while typing (otherwise only on the trigger key)
---@field builtin string             "auto": use vim.lsp.inline_completion when Neovim has it; "never"
---@field hl_group string            highlight of the ghost text
---@field keymaps tandem.Keymaps
---@field next_edit tandem.NextEditConfig

---@class tandem.NextEditConfig
---@field enabled boolean            ask for the next edit after each change
---@field debounce_ms integer        wait this long after the last change before asking
---@field keymaps { accept: string|false, dismiss: string|false }  normal and insert mode
---@field hl_delete string           the text the edit replaces
---@field hl_insert string           the text it inserts (virtual text)
---@field hl_hint string             the hint pointing to an edit off screen

---@type tandem.Config
M.defaults = {
  -- The server's log as window/logMessage at each line's level: Neovim's lsp.log records a server's
  -- stderr as ERROR, every routine line included.
  cmd = { "tandem", "serve", "--log-to-client" },
  cmd_env = nil,
  root_markers = { "tandem.toml", ".git", ".hg", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" },
  filetypes = nil,
  exclude_filetypes = { "help", "gitcommit", "gitrebase", "TelescopePrompt", "lazy", "mason", "oil" },
  init_options = {},
  settings = {},
  auto_trigger = true,
  -- No debounce here: the server owns it (it answers what it already has at once, and waits before
  -- calling a model), so each change asks it straight away.
  builtin = "auto",
  -- Defined by ghost.lua (italic grey, unlike Comment), so a suggestion on a comment line still stands out.
  hl_group = "TandemGhost",
  keymaps = {
    accept = "<Tab>",
    accept_word = "<M-Right>",
    accept_line = "<M-Down>",
    dismiss = "<C-]>",
    trigger = "<M-\\>",
  },
  next_edit = {
    enabled = true,
    debounce_ms = 75,
    -- The first press on an edit off screen jumps to it; the next applies it.
    keymaps = { accept = "<M-l>", dismiss = "<M-h>" },
    hl_delete = "DiffDelete",
    hl_insert = "DiffAdd",
    hl_hint = "Comment",
  },
}

--- The defaults with `opts` merged over them (lists in `opts` replace the default lists).
---@param opts table|nil
---@return tandem.Config
function M.merge(opts)
  vim.validate("opts", opts, "table", true)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- tbl_deep_extend merges list-like tables index by index; a user's list means "exactly these".
  for _, key in ipairs({ "cmd", "root_markers", "filetypes", "exclude_filetypes" }) do
    if opts and opts[key] ~= nil then
      merged[key] = vim.deepcopy(opts[key])
    end
  end
  M.check(merged)
  return merged
end

--- Raise an error that names the bad key, so `setup` fails loudly instead of misbehaving later.
---@param c tandem.Config
function M.check(c)
  vim.validate("cmd", c.cmd, function(v)
    return type(v) == "table" and #v > 0 and type(v[1]) == "string"
  end, "a non-empty list of strings")
  vim.validate("root_markers", c.root_markers, "table")
  vim.validate("filetypes", c.filetypes, "table", true)
  vim.validate("exclude_filetypes", c.exclude_filetypes, "table")
  vim.validate("init_options", c.init_options, "table")
  vim.validate("settings", c.settings, "table")
  vim.validate("auto_trigger", c.auto_trigger, "boolean")
  vim.validate("builtin", c.builtin, function(v)
    return v == "auto" or v == "never"
  end, '"auto" or "never"')
  vim.validate("hl_group", c.hl_group, "string")
  vim.validate("next_edit", c.next_edit, "table")
  vim.validate("next_edit.enabled", c.next_edit.enabled, "boolean")
  vim.validate("next_edit.debounce_ms", c.next_edit.debounce_ms, function(v)
    return type(v) == "number" and v >= 0
  end, "a number of milliseconds >= 0")
  for name, key in pairs(c.next_edit.keymaps) do
    vim.validate("next_edit.keymaps." .. name, key, function(v)
      return v == false or type(v) == "string"
    end, "a key (string) or false")
  end
  for name, key in pairs(c.keymaps) do
    vim.validate("keymaps." .. name, key, function(v)
      return v == false or type(v) == "string"
    end, "a key (string) or false")
  end
end

return M
