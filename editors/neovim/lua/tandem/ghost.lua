-- Ghost text: a suggestion drawn with one extmark at the cursor, never written into the buffer.
--
-- The first line is inline virtual text (it pushes any text after the cursor to the right, as the
-- suggestion would once accepted); further lines are virtual lines below the cursor's line.

local M = {}

M.ns = vim.api.nvim_create_namespace("tandem.ghost")

-- The ghost text's own highlight: italic and a grey of its own in both 256-colour (ctermfg) and truecolor
-- (fg) terminals. `Comment` is not enough: without truecolor Neovim's default draws it in the normal
-- foreground (ghost and typed text look the same), and on a comment line nothing would set them apart.
-- `default`: a colour scheme's or the user's own TandemGhost wins.
M.hl_group = "TandemGhost"
M.hl = { fg = "#7f848e", ctermfg = 244, italic = true, cterm = { italic = true }, default = true }

--- Define TandemGhost (again after `:colorscheme`, which clears highlights).
function M.define_highlight()
  vim.api.nvim_set_hl(0, M.hl_group, M.hl)
end

---@param bufnr integer
---@param text string
---@return string
local function expand_tabs(bufnr, text)
  -- Virtual lines are drawn from column 0 without tab expansion, so indentation must be spaces.
  local ts = vim.bo[bufnr].tabstop
  return (text:gsub("\t", string.rep(" ", ts > 0 and ts or 8)))
end

--- Where the first line's pieces go: all of it at `col`, or, when the suggestion replaces characters
--- after the cursor that it also holds in order (`kept`: an auto-inserted `)`), the parts between them, so
--- that the screen reads as the line will once accepted (`(text, width)` + `:` around the editor's `)`).
---@param first string
---@param col integer
---@param kept string
---@return { col: integer, text: string }[]
local function pieces(first, col, kept)
  if kept == "" then
    return { { col = col, text = first } }
  end
  local parts, from = {}, 1
  for i = 1, #kept do
    local at = first:find(kept:sub(i, i), from, true)
    if not at then
      return { { col = col, text = first } }
    end
    parts[#parts + 1] = { col = col + i - 1, text = first:sub(from, at - 1) }
    from = at + 1
  end
  parts[#parts + 1] = { col = col + #kept, text = first:sub(from) }
  return parts
end

--- Draw `text` as ghost text at (row, col) (0-based row, byte col), replacing any shown before. `kept`:
--- the characters after the cursor the suggestion replaces (drawn around, not pushed aside).
---@param bufnr integer
---@param row integer
---@param col integer
---@param text string
---@param hl_group string
---@param kept string|nil
function M.show(bufnr, row, col, text, hl_group, kept)
  M.clear(bufnr)
  if text == "" then
    return
  end
  local lines = vim.split(text, "\n", { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { expand_tabs(bufnr, lines[i]), hl_group } }
  end
  for index, piece in ipairs(pieces(lines[1], col, kept or "")) do
    if index == 1 or piece.text ~= "" then
      vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, piece.col, {
        virt_text = { { piece.text, hl_group } },
        virt_text_pos = "inline",
        virt_lines = index == 1 and #virt_lines > 0 and virt_lines or nil,
        -- Only the ghost's own highlight: with "combine" it took that of the text it stands before, and
        -- between auto-paired brackets that is MatchParen (bold, underlined): the ghost read as typed text.
        hl_mode = "replace",
        -- Text the user types at the cursor goes before the ghost text, not after it.
        right_gravity = true,
      })
    end
  end
end

---@param bufnr integer
function M.clear(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- What is drawn in `bufnr`, read back from its extmarks: { row, col, text } or nil. `text` is the
--- suggestion as the screen shows it: the ghost pieces with the buffer's characters between them.
---@param bufnr integer
---@return { row: integer, col: integer, text: string }|nil
function M.read(bufnr)
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, M.ns, 0, -1, { details = true })
  if not marks[1] then
    return nil
  end
  local row, col = marks[1][2], marks[1][3]
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local parts, virt_lines, at = {}, {}, col
  for _, mark in ipairs(marks) do
    parts[#parts + 1] = line:sub(at + 1, mark[3])
    at = mark[3]
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      parts[#parts + 1] = chunk[1]
    end
    for _, virt_line in ipairs(mark[4].virt_lines or {}) do
      local text = {}
      for _, chunk in ipairs(virt_line) do
        text[#text + 1] = chunk[1]
      end
      virt_lines[#virt_lines + 1] = table.concat(text)
    end
  end
  return { row = row, col = col, text = table.concat({ table.concat(parts), unpack(virt_lines) }, "\n") }
end

return M
