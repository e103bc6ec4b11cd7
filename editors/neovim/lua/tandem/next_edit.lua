-- Next-edit suggestions: after you change the buffer, tandem predicts your next change nearby
-- (`textDocument/copilotInlineEdit`). Text inserted within a line is shown as virtual text where it goes;
-- text replaced is highlighted and struck through, with the lines as they will read on virtual lines below
-- it; a hint at the cursor points to an edit that is off screen. The accept key jumps to an
-- off-screen edit first, then applies it; the dismiss key hides it. An edit is applied only to the buffer
-- version it was computed for: if the buffer changed since, it is dropped, never applied over newer text.

local client_mod = require("tandem.client")

local M = {}

local METHOD = "textDocument/copilotInlineEdit"
local DID_SHOW = "textDocument/didShowInlineEdit"
local DISMISSED = "tandem.nextEditDismissed"

---@type tandem.Config|nil
local cfg = nil
local ns = vim.api.nvim_create_namespace("tandem_next_edit")
-- Struck through, over the replaced text's own highlight (hl_delete).
local STRIKE = "TandemNextEditStrike"

---@class tandem.NextEditState
---@field timer uv.uv_timer_t|nil
---@field pending { client_id: integer, id: integer }|nil
---@field edit table|nil       the item shown: { text, textDocument = { uri, version }, range, command }
---@field client_id integer|nil
---@field jumped boolean       the accept key has moved the cursor to an off-screen edit
---@field below integer        virtual lines drawn below the edit's last line (the lines as they will read)

---@type table<integer, tandem.NextEditState>
local buffers = {}

---@param config tandem.Config
function M.setup(config)
  cfg = config
end

local function state(bufnr)
  buffers[bufnr] = buffers[bufnr] or { jumped = false }
  return buffers[bufnr]
end

local function version(bufnr)
  return vim.lsp.util.buf_versions[bufnr]
end

--- Byte column of an LSP position in `bufnr`.
local function byte_col(bufnr, position, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1] or ""
  local ok, col = pcall(vim.str_byteindex, line, encoding, position.character, false)
  return ok and col or #line
end

--- Whether `row` (0-based) is on screen in the current window.
local function on_screen(row)
  return row + 1 >= vim.fn.line("w0") and row + 1 <= vim.fn.line("w$")
end

--- Screen rows the edit takes in `win` with `top_row` (0-based) at the top: its lines, anything drawn
--- between them, and the virtual lines below its last line (which nvim_win_text_height counts with the
--- line after).
local function rows_needed(win, top_row, finish_row, below)
  return vim.api.nvim_win_text_height(win, { start_row = top_row, end_row = finish_row }).all + below
end

--- Whether the whole edit (struck text and the lines below it) is drawn in `win` now.
local function fits(win, edit, below)
  local top_row = vim.fn.line("w0", win) - 1
  local start_row, finish_row = edit.range.start.line, edit.range["end"].line
  return start_row >= top_row
    and finish_row + 1 <= vim.fn.line("w$", win)
    and rows_needed(win, top_row, finish_row, below) <= vim.api.nvim_win_get_height(win)
end

--- Scroll `win` down (never past the edit's first line, where the cursor is) until the whole edit is drawn;
--- whether it is. Jumping to an edit below the window put its first line on the bottom row and the
--- replacement below the window, where a second press applied it unseen.
local function scroll_to_fit(win, edit, below)
  local start_row, finish_row = edit.range.start.line, edit.range["end"].line
  local top_row = math.min(vim.fn.line("w0", win) - 1, start_row)
  local height = vim.api.nvim_win_get_height(win)
  while top_row < start_row and rows_needed(win, top_row, finish_row, below) > height do
    top_row = top_row + 1
  end
  vim.api.nvim_win_call(win, function()
    local view = vim.fn.winsaveview()
    view.topline, view.topfill = top_row + 1, 0
    vim.fn.winrestview(view)
  end)
  return fits(win, edit, below)
end

--- Hide the shown edit (nothing is sent).
function M.clear(bufnr)
  local s = state(bufnr)
  s.edit, s.jumped, s.below = nil, false, 0
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  end
end

--- The edit shown in `bufnr`, or nil.
function M.shown(bufnr)
  return state(bufnr).edit
end

local function render(bufnr)
  local s = state(bufnr)
  local edit = s.edit
  local client = s.client_id and vim.lsp.get_client_by_id(s.client_id)
  if not edit or not client then
    return
  end
  vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
  s.below = 0
  local encoding = client.offset_encoding
  local start, finish = edit.range.start, edit.range["end"]
  local start_col, end_col = byte_col(bufnr, start, encoding), byte_col(bufnr, finish, encoding)
  if start.line ~= finish.line or start_col ~= end_col then
    -- The replaced text in hl_delete, struck through (stacked groups combine; `:colorscheme` clears
    -- highlights, so the strike is defined again here).
    vim.api.nvim_set_hl(0, STRIKE, { strikethrough = true, default = true })
    vim.api.nvim_buf_set_extmark(bufnr, ns, start.line, start_col, {
      end_row = finish.line,
      end_col = end_col,
      hl_group = { cfg.next_edit.hl_delete, STRIKE },
    })
  end
  -- Line breaks as apply_text_edits reads them ('\r\n' in a CRLF file): no `^M` drawn.
  local text = edit.text:gsub("\r\n?", "\n")
  local lines = vim.split(text, "\n", { plain = true })
  if start.line == finish.line and start_col == end_col and #lines == 1 then
    -- Text inserted within a line reads right where it goes.
    vim.api.nvim_buf_set_extmark(bufnr, ns, finish.line, end_col, {
      virt_text = { { lines[1], cfg.next_edit.hl_insert } },
      virt_text_pos = "inline",
    })
  else
    -- A replacement (or new lines): the range struck through, and below it the lines as they will read,
    -- on virtual lines of their own. Drawn inline after the range, the old and new text ran together
    -- (`return self._split(texts = self._munge_whitespace(s))`).
    local first = vim.api.nvim_buf_get_lines(bufnr, start.line, start.line + 1, false)[1] or ""
    local last = vim.api.nvim_buf_get_lines(bufnr, finish.line, finish.line + 1, false)[1] or ""
    local after = first:sub(1, start_col) .. text .. last:sub(end_col + 1)
    local below = {}
    local tabstop = string.rep(" ", vim.bo[bufnr].tabstop > 0 and vim.bo[bufnr].tabstop or 8)
    for _, line in ipairs(vim.split(after, "\n", { plain = true })) do
      -- Virtual lines are drawn without tab expansion.
      below[#below + 1] = { { (line:gsub("\t", tabstop)), cfg.next_edit.hl_insert } }
    end
    vim.api.nvim_buf_set_extmark(bufnr, ns, finish.line, 0, { virt_lines = below })
    s.below = #below
  end
  if not on_screen(start.line) then
    local row = vim.api.nvim_win_get_cursor(0)[1] - 1
    local key = cfg.next_edit.keymaps.accept or "accept"
    vim.api.nvim_buf_set_extmark(bufnr, ns, row, 0, {
      virt_text = { { string.format(" next edit at line %d (%s)", start.line + 1, key), cfg.next_edit.hl_hint } },
      virt_text_pos = "eol",
    })
  end
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

--- Ask for the next edit at the cursor of the current window (which shows `bufnr`).
function M.request(bufnr)
  local client = client_mod.get(bufnr)
  if not client or vim.api.nvim_get_current_buf() ~= bufnr then
    return
  end
  local s = state(bufnr)
  cancel_pending(s)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.textDocument.version = version(bufnr)
  local asked = version(bufnr)
  local ok, id = client:request(METHOD, params, function(err, result)
    if s.pending and s.pending.id == id then
      s.pending = nil
    end
    if err or not result or not result.edits or #result.edits == 0 then
      return
    end
    local edit = result.edits[1]
    -- An answer for a version the buffer has left is never shown.
    if version(bufnr) ~= asked or edit.textDocument.version ~= asked then
      return
    end
    s.edit, s.client_id, s.jumped = edit, client.id, false
    render(bufnr)
    client:notify(DID_SHOW, { item = edit })
  end, bufnr)
  if ok then
    s.pending = { client_id = client.id, id = id }
  end
end

--- A change in the buffer: what was shown no longer applies; ask again once the typing pauses.
function M.on_change(bufnr)
  local s = state(bufnr)
  M.clear(bufnr)
  s.timer = s.timer or assert(vim.uv.new_timer())
  s.timer:stop()
  s.timer:start(
    cfg.next_edit.debounce_ms,
    0,
    vim.schedule_wrap(function()
      if vim.api.nvim_buf_is_valid(bufnr) then
        M.request(bufnr)
      end
    end)
  )
end

--- Apply the shown edit (jumping to it first when it is off screen). False when there is none to act on.
---@return boolean
function M.accept(bufnr)
  local s = state(bufnr)
  local edit = s.edit
  local client = s.client_id and vim.lsp.get_client_by_id(s.client_id)
  if not edit or not client then
    return false
  end
  if edit.textDocument.version ~= version(bufnr) then
    -- The buffer moved on: the edit was for older text.
    M.clear(bufnr)
    return false
  end
  local start = edit.range.start
  local win = vim.api.nvim_get_current_win()
  -- Only an edit drawn whole is applied: the first press on one that is not brings it into view (the
  -- cursor on its first line, the window scrolled so that the lines below it fit); a press on one that
  -- still cannot be drawn whole (taller than the window) applies nothing and says so.
  if not fits(win, edit, s.below or 0) then
    if not s.jumped then
      vim.api.nvim_win_set_cursor(win, { start.line + 1, byte_col(bufnr, start, client.offset_encoding) })
      s.jumped = true
      render(bufnr)
      scroll_to_fit(win, edit, s.below or 0)
    elseif not scroll_to_fit(win, edit, s.below or 0) then
      -- Short: a message wider than the screen stops Neovim at a hit-enter prompt.
      vim.notify("tandem: next edit taller than the window", vim.log.levels.WARN)
    end
    return true
  end
  M.clear(bufnr)
  vim.lsp.util.apply_text_edits({ { range = edit.range, newText = edit.text } }, bufnr, client.offset_encoding)
  local lines = vim.split((edit.text:gsub("\r\n?", "\n")), "\n", { plain = true })
  local row = start.line + #lines - 1
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local col = #lines == 1 and byte_col(bufnr, start, client.offset_encoding) + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { row + 1, math.min(col, #line) })
  if edit.command then
    client:exec_cmd(edit.command, { bufnr = bufnr })
  end
  return true
end

--- Hide the shown edit and tell the server it was turned down. False when none is shown.
---@return boolean
function M.dismiss(bufnr)
  local s = state(bufnr)
  local edit = s.edit
  local client = s.client_id and vim.lsp.get_client_by_id(s.client_id)
  M.clear(bufnr)
  if not edit then
    return false
  end
  if client and edit.command then
    client:exec_cmd({ title = "dismiss", command = DISMISSED, arguments = edit.command.arguments }, { bufnr = bufnr })
  end
  return true
end

---@param bufnr integer
function M.attach(bufnr)
  local group = vim.api.nvim_create_augroup("tandem_next_edit_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.on_change(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "BufUnload", "BufWipeout" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      local s = buffers[bufnr]
      if s and s.timer then
        s.timer:stop()
        s.timer:close()
      end
      buffers[bufnr] = nil
    end,
  })
  -- With no next edit the keys do nothing. They are not fed back as the inline keys are (keymaps.lua):
  -- Neovim reads an unmapped Alt key (the defaults) as <Esc> and the letter, so insert mode ended and the
  -- user's next keys ran as commands.
  local keys = cfg.next_edit.keymaps
  for _, mode in ipairs({ "n", "i" }) do
    for name, action in pairs({ accept = M.accept, dismiss = M.dismiss }) do
      local key = keys[name]
      if key then
        vim.keymap.set(mode, key, function()
          action(bufnr)
        end, { buffer = bufnr, silent = true, desc = "tandem: " .. name .. " the next edit" })
      end
    end
  end
end

return M
