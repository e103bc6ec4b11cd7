-- tandem for Neovim: AI completion as ghost text from the tandem language server.
--
--   require("tandem").setup({ init_options = { models = { fast = { ... } } } })
--
-- The server does the work (model calls, caching, routing); this plugin starts it, asks for
-- `textDocument/inlineCompletion` while you type, draws the answer, and accepts it on a key.

local M = {}

---@type tandem.Config|nil
local cfg = nil

--- The configuration in force, or nil before `setup`.
---@return tandem.Config|nil
function M.config()
  return cfg
end

--- True when Neovim's own `vim.lsp.inline_completion` (0.12+) renders the suggestions.
---@return boolean
function M.uses_builtin()
  local builtin = vim.lsp.inline_completion
  return cfg ~= nil and cfg.builtin == "auto" and builtin ~= nil and builtin.enable ~= nil
end

local function current()
  return vim.api.nvim_get_current_buf()
end

--- Accept the whole suggestion. Returns false when none is shown (so a mapping can fall back).
---@return boolean
function M.accept()
  if M.uses_builtin() then
    return vim.lsp.inline_completion.get({ bufnr = current() }) == true
  end
  return require("tandem.suggest").accept(current(), "all")
end

--- Accept the suggestion's next word.
---@return boolean
function M.accept_word()
  return not M.uses_builtin() and require("tandem.suggest").accept(current(), "word")
end

--- Accept the rest of the suggestion's current line.
---@return boolean
function M.accept_line()
  return not M.uses_builtin() and require("tandem.suggest").accept(current(), "line")
end

--- Hide the suggestion. Returns false when none was shown.
---@return boolean
function M.dismiss()
  if M.uses_builtin() then
    return false
  end
  local suggest = require("tandem.suggest")
  local shown = suggest.visible(current())
  suggest.dismiss(current())
  return shown
end

--- Ask for a suggestion now.
---@return boolean
function M.trigger()
  if M.uses_builtin() then
    return vim.lsp.inline_completion.get({ bufnr = current() }) == true
  end
  require("tandem.suggest").request(current(), true)
  return true
end

--- Whether a suggestion is shown in the current buffer.
---@return boolean
function M.is_visible()
  return require("tandem.suggest").visible(current())
end

--- The suggestion shown in the current buffer (what accepting inserts), or nil.
---@return string|nil
function M.suggestion()
  return require("tandem.suggest").text(current())
end

--- For 'statusline': `%{v:lua.require'tandem'.statusline()}`.
---@return string
function M.statusline()
  return require("tandem.status").statusline()
end

--- Run an edit on `range` (an LSP range) of the current buffer: `tandem.edit` on the server.
---@param range table
---@param instruction string
---@param done fun(err: string|nil, result: any)|nil
function M.edit(range, instruction, done)
  require("tandem.edit").send(current(), range, instruction, done)
end

---@param client vim.lsp.Client
---@param bufnr integer
local function on_attach(client, bufnr)
  local keymaps = require("tandem.keymaps")
  keymaps.set(bufnr, cfg.keymaps, {
    accept = M.accept,
    accept_word = M.accept_word,
    accept_line = M.accept_line,
    dismiss = M.dismiss,
    trigger = M.trigger,
  })
  if cfg.next_edit.enabled then
    require("tandem.next_edit").attach(bufnr)
  end
  if M.uses_builtin() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr, client_id = client.id })
  else
    require("tandem.suggest").attach(bufnr)
  end
end

local function create_commands()
  vim.api.nvim_create_user_command("TandemEdit", function(args)
    require("tandem.edit").command_handler(args)
  end, { range = true, nargs = "*", desc = "tandem: edit the selected lines by an instruction" })
  vim.api.nvim_create_user_command("TandemStatus", function()
    vim.api.nvim_echo({ { require("tandem.status").describe() } }, true, {})
  end, { desc = "tandem: show the server's status" })
end

--- Configure tandem and start it for every matching buffer, now and later.
---@param opts table|nil  merged over require("tandem.config").defaults
function M.setup(opts)
  cfg = require("tandem.config").merge(opts)
  local client = require("tandem.client")
  client.setup(cfg, on_attach)
  local ghost = require("tandem.ghost")
  ghost.define_highlight()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("tandem.highlight", { clear = true }),
    callback = ghost.define_highlight,
  })
  require("tandem.suggest").setup(cfg)
  require("tandem.next_edit").setup(cfg)
  create_commands()
  local group = vim.api.nvim_create_augroup("tandem", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    callback = function(args)
      client.start(args.buf)
    end,
  })
  -- Files without a filetype get no FileType event.
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    callback = function(args)
      if vim.bo[args.buf].filetype == "" then
        client.start(args.buf)
      end
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      client.start(bufnr)
    end
  end
end

return M
