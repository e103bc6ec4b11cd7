-- Inline suggestions on Neovim 0.11: ask on every change, show as ghost text, accept or dismiss.
--
-- Per buffer: at most one request in flight (a newer one cancels it) and at most one suggestion shown.
-- The server decides when to call a model (its own debounce) and answers a suggestion being typed through
-- from the stream that produced it, in well under a millisecond, so this module neither waits nor keeps
-- suggestions itself: each change asks again at once.

local client_mod = require("tandem.client")
local ghost = require("tandem.ghost")
local status = require("tandem.status")
local view = require("tandem.view")

local M = {}

---@type tandem.Config|nil
local cfg = nil

---@class tandem.Shown
---@field row integer          0-based row of the anchor (the cursor when shown)
---@field col integer          byte column of the anchor
---@field text string          what accepting would insert at the anchor
---@field tick integer         b:changedtick the suggestion is valid for
---@field delete_after integer bytes after the anchor that accepting replaces (item range beyond cursor)
---@field command table|nil    the item's command, run after the whole suggestion is accepted
---@field client_id integer

---@class tandem.BufferState
---@field pending { client_id: integer, id: integer }|nil
---@field shown tandem.Shown|nil

---@type table<integer, tandem.BufferState>
local buffers = {}

---@param config tandem.Config
function M.setup(config)
  cfg = config
end

---@param bufnr integer
---@return tandem.BufferState
local function state(bufnr)
  local s = buffers[bufnr]
  if not s then
    s = {}
    buffers[bufnr] = s
  end
  return s
end

---@return integer row 0-based
---@return integer col byte column
local function cursor()
  local pos = vim.api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

local function in_insert_mode()
  return vim.api.nvim_get_mode().mode:sub(1, 1) == "i"
end

---@param bufnr integer
---@param row integer
---@return string
local function line_at(bufnr, row)
  return vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
end

local function cancel_pending(s)
  if s.pending then
    local client = vim.lsp.get_client_by_id(s.pending.client_id)
    if client then
      client_mod.cancel(client, s.pending.id)
    end
    s.pending = nil
  end
end

--- Hide the suggestion in `bufnr` and forget any request in flight for it.
---@param bufnr integer
function M.dismiss(bufnr)
  local s = buffers[bufnr]
  if not s then
    return
  end
  cancel_pending(s)
  s.shown = nil
  ghost.clear(bufnr)
end

---@param bufnr integer
---@return boolean
function M.visible(bufnr)
  local s = buffers[bufnr]
  return s ~= nil and s.shown ~= nil
end

--- The text accepting would insert, or nil.
---@param bufnr integer
---@return string|nil
function M.text(bufnr)
  local s = buffers[bufnr]
  return s and s.shown and s.shown.text or nil
end

---@param bufnr integer
---@param shown tandem.Shown
local function show(bufnr, shown)
  -- Only what the window can draw may be accepted (tandem.view).
  if bufnr == vim.api.nvim_get_current_buf() then
    shown.text = view.fit(0, shown.text)
  end
  state(bufnr).shown = shown
  local kept = line_at(bufnr, shown.row):sub(shown.col + 1, shown.col + shown.delete_after)
  ghost.show(bufnr, shown.row, shown.col, shown.text, cfg and cfg.hl_group or "TandemGhost", kept)
end

--- Plain text of an InlineCompletionItem's insertText (a snippet keeps its placeholders' defaults), with
--- its line breaks as '\n'. In a CRLF file (fileformat=dos) the server's text breaks lines with '\r\n';
--- the buffer's lines hold no '\r' (Neovim writes the line ends), so a '\r' left in drew `:^M` and was
--- written into the line. `vim.lsp.util.apply_text_edits` reads line breaks the same way.
---@param insert string|table
---@return string
local function insert_text(insert)
  local text = type(insert) == "string" and insert or insert.value or ""
  if type(insert) ~= "string" then
    text = text:gsub("%${%d+:([^}]*)}", "%1"):gsub("%${%d+}", ""):gsub("%$%d+", "")
  end
  return (text:gsub("\r\n?", "\n"))
end

--- Show the first item of an inline completion answer, if it still fits where the cursor is.
---@param bufnr integer
---@param client vim.lsp.Client
---@param item table lsp.InlineCompletionItem
---@param row integer
---@param col integer
---@param tick integer
local function present(bufnr, client, item, row, col, tick)
  local text = insert_text(item.insertText or "")
  local delete_after = 0
  if item.range then
    local range = item.range
    if range.start.line ~= row or range["end"].line ~= row then
      return -- a multi-line replacement cannot be drawn as ghost text at the cursor
    end
    local line = line_at(bufnr, row)
    local start_col = client_mod.byte_col(client, line, range.start.character)
    local end_col = client_mod.byte_col(client, line, range["end"].character)
    if start_col > col or end_col < col then
      return
    end
    -- The item may repeat what is already typed between the range start and the cursor.
    local typed = line:sub(start_col + 1, col)
    if not vim.startswith(text, typed) then
      return
    end
    text = text:sub(#typed + 1)
    delete_after = end_col - col
  end
  if text == "" then
    return
  end
  show(bufnr, {
    row = row,
    col = col,
    text = text,
    tick = tick,
    delete_after = delete_after,
    command = item.command,
    client_id = client.id,
  })
end

--- Ask tandem for a suggestion at the cursor now.
---@param bufnr integer
---@param invoked boolean true when the user asked for it
function M.request(bufnr, invoked)
  if bufnr ~= vim.api.nvim_get_current_buf() or not in_insert_mode() then
    return
  end
  local client = client_mod.get(bufnr)
  if not client then
    return
  end
  local s = state(bufnr)
  cancel_pending(s)
  local row, col = cursor()
  local tick = vim.b[bufnr].changedtick
  local sent_ns = vim.uv.hrtime()
  status.update({ state = "waiting" })
  local id
  id = client_mod.inline_completion(client, bufnr, invoked, function(err, result)
    if s.pending and s.pending.id == id then
      s.pending = nil
    end
    if err then
      -- -32800 RequestCancelled: we superseded it ourselves.
      if err.code ~= -32800 then
        status.update({ state = "ready", message = err.message })
      end
      return
    end
    status.update({ state = "ready", round_trip_ms = (vim.uv.hrtime() - sent_ns) / 1e6 })
    local r, c = cursor()
    if not vim.api.nvim_buf_is_valid(bufnr) or vim.b[bufnr].changedtick ~= tick or r ~= row or c ~= col then
      return -- the user moved on; a newer request is (or will be) on its way
    end
    if not in_insert_mode() or bufnr ~= vim.api.nvim_get_current_buf() then
      return
    end
    local items = result and (result.items or result) or {}
    if items[1] then
      present(bufnr, client, items[1], row, col, tick)
    end
  end)
  if id then
    s.pending = { client_id = client.id, id = id }
  end
end

--- TextChangedI: ask again (the server answers the rest of a suggestion being typed through at once).
---@param bufnr integer
function M.on_text_changed(bufnr)
  local s = state(bufnr)
  if s.shown and s.shown.tick == vim.b[bufnr].changedtick then
    return -- our own edit (a partial accept) already re-drew the rest
  end
  M.dismiss(bufnr)
  if cfg and cfg.auto_trigger then
    M.request(bufnr, false)
  end
end

--- InsertEnter: typing is about to start where the cursor is. Tell the server (`tandem/warm`): a model on
--- this machine reads the prompt there meanwhile, so the first key does not wait for the file's first read
--- (1.5-3 s on one core for a small model); the server ignores it for a cloud model.
---@param bufnr integer
function M.warm(bufnr)
  if not (cfg and cfg.auto_trigger) or bufnr ~= vim.api.nvim_get_current_buf() then
    return
  end
  local client = client_mod.get(bufnr)
  if client then
    client:notify("tandem/warm", client_mod.position_params(client, vim.api.nvim_get_current_win()))
  end
end

--- CursorMovedI: moving away without typing hides the suggestion.
---@param bufnr integer
function M.on_cursor_moved(bufnr)
  local s = buffers[bufnr]
  if not s or not s.shown then
    return
  end
  if vim.b[bufnr].changedtick ~= s.shown.tick then
    return -- text changed too: on_text_changed decides
  end
  local row, col = cursor()
  if row ~= s.shown.row or col ~= s.shown.col then
    M.dismiss(bufnr)
  end
end

--- The part of `text` that accepting `what` ("all", "word" or "line") takes.
---@param text string
---@param what string
---@return string
function M.part(text, what)
  if what == "word" then
    local space = text:match("^%s*")
    local rest = text:sub(#space + 1)
    local word = rest:match("^[%w_]+") or rest:match("^[^%w_%s]+") or ""
    return space .. word
  elseif what == "line" then
    local newline = text:find("\n", 1, true)
    if not newline then
      return text
    elseif newline > 1 then
      return text:sub(1, newline - 1)
    end
    local next_newline = text:find("\n", 2, true)
    return next_newline and text:sub(1, next_newline - 1) or text
  end
  return text
end

--- Insert all of the suggestion, its next word, or the rest of its line. Returns false if none is shown.
---@param bufnr integer
---@param what string "all" | "word" | "line"
---@return boolean
function M.accept(bufnr, what)
  local s = buffers[bufnr]
  local shown = s and s.shown
  if not shown then
    return false
  end
  local row, col = cursor()
  if row ~= shown.row or col ~= shown.col then
    M.dismiss(bufnr)
    return false
  end
  local part = M.part(shown.text, what)
  if part == "" then
    return false
  end
  local rest = shown.text:sub(#part + 1)
  local lines = vim.split(part, "\n", { plain = true })
  local end_col = rest == "" and col + shown.delete_after or col
  vim.api.nvim_buf_set_text(bufnr, row, col, row, end_col, lines)
  local new_row = row + #lines - 1
  local new_col = (#lines == 1 and col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { new_row + 1, new_col })
  if rest ~= "" then
    shown.row, shown.col, shown.text = new_row, new_col, rest
    shown.tick = vim.b[bufnr].changedtick
    show(bufnr, shown)
    return true
  end
  s.shown = nil
  ghost.clear(bufnr)
  if shown.command then
    local client = vim.lsp.get_client_by_id(shown.client_id)
    if client then
      client:exec_cmd(shown.command, { bufnr = bufnr })
    end
  end
  return true
end

--- Stop watching `bufnr` (it was unloaded).
---@param bufnr integer
function M.detach(bufnr)
  local s = buffers[bufnr]
  if s then
    M.dismiss(bufnr)
    buffers[bufnr] = nil
  end
end

--- Watch `bufnr` for typing: called once a tandem client attaches to it.
---@param bufnr integer
function M.attach(bufnr)
  local group = vim.api.nvim_create_augroup("tandem.suggest." .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd("TextChangedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.on_text_changed(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("InsertEnter", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.warm(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.on_cursor_moved(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufUnload", "BufWipeout" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end,
  })
end

return M
