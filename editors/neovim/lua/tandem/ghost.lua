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

--- Draw `text` as ghost text at (row, col) (0-based row, byte col), replacing any shown before.
---@param bufnr integer
---@param row integer
---@param col integer
---@param text string
---@param hl_group string
function M.show(bufnr, row, col, text, hl_group)
  M.clear(bufnr)
  if text == "" then
    return
  end
  local lines = vim.split(text, "\n", { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { expand_tabs(bufnr, lines[i]), hl_group } }
  end
  vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, col, {
    virt_text = { { lines[1], hl_group } },
    virt_text_pos = "inline",
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = "combine",
    -- Text the user types at the cursor goes before the ghost text, not after it.
    right_gravity = true,
  })
end

---@param bufnr integer
function M.clear(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- What is drawn in `bufnr`, read back from the extmark: { row, col, text } or nil.
---@param bufnr integer
---@return { row: integer, col: integer, text: string }|nil
function M.read(bufnr)
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, M.ns, 0, -1, { details = true })
  local mark = marks[1]
  if not mark then
    return nil
  end
  local details = mark[4]
  local parts = {}
  for _, chunk in ipairs(details.virt_text or {}) do
    parts[#parts + 1] = chunk[1]
  end
  local lines = { table.concat(parts) }
  for _, virt_line in ipairs(details.virt_lines or {}) do
    local line = {}
    for _, chunk in ipairs(virt_line) do
      line[#line + 1] = chunk[1]
    end
    lines[#lines + 1] = table.concat(line)
  end
  return { row = mark[2], col = mark[3], text = table.concat(lines, "\n") }
end

return M
