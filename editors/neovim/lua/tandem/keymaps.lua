-- Insert-mode keys, set buffer-locally where tandem is attached. A key with nothing to act on does what
-- it would have done without tandem (Tab still indents when no suggestion is shown).

local M = {}

---@param key string
local function feed(key)
  vim.api.nvim_feedkeys(vim.keycode(key), "n", false)
end

---@param bufnr integer
---@param key string|false
---@param desc string
---@param action fun(): boolean  true if it did something
local function map(bufnr, key, desc, action)
  if not key then
    return
  end
  vim.keymap.set("i", key, function()
    if not action() then
      feed(key)
    end
  end, { buffer = bufnr, silent = true, desc = desc })
end

---@param bufnr integer
---@param keymaps tandem.Keymaps
---@param actions { accept: fun(): boolean, accept_word: fun(): boolean, accept_line: fun(): boolean, dismiss: fun(): boolean, trigger: fun(): boolean }
function M.set(bufnr, keymaps, actions)
  map(bufnr, keymaps.accept, "tandem: accept the suggestion", actions.accept)
  map(bufnr, keymaps.accept_word, "tandem: accept the next word", actions.accept_word)
  map(bufnr, keymaps.accept_line, "tandem: accept the rest of the line", actions.accept_line)
  map(bufnr, keymaps.dismiss, "tandem: dismiss the suggestion", actions.dismiss)
  map(bufnr, keymaps.trigger, "tandem: suggest now", actions.trigger)
end

return M
