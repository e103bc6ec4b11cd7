-- What of a suggestion the window can show.
--
-- A suggestion's lines after the first are virtual lines below the cursor's line. On the window's bottom
-- row (typing at the end of a file) they fall below the window, and Neovim does not scroll for virtual
-- lines: Tab would insert text the user never saw. So the window scrolls up to make room (never past the
-- cursor's line), and a suggestion taller than the room is cut to the lines that fit; the rest comes as
-- the next suggestion once these are accepted.

local M = {}

--- Rows of the window below the cursor's screen line.
---@param win integer
---@return integer
local function rows_below(win)
  return vim.api.nvim_win_get_height(win) - vim.api.nvim_win_call(win, vim.fn.winline)
end

--- Make room below the cursor for `wanted` virtual lines, scrolling `win` up if need be; the rows there are.
---@param win integer
---@param wanted integer
---@return integer
function M.room(win, wanted)
  local below = rows_below(win)
  if below >= wanted then
    return below
  end
  local cursor_row = vim.api.nvim_win_call(win, vim.fn.winline)
  local scroll = math.min(wanted - below, cursor_row - 1)
  if scroll > 0 then
    vim.api.nvim_win_call(win, function()
      local view = vim.fn.winsaveview()
      view.topline = view.topline + scroll
      vim.fn.winrestview(view)
    end)
  end
  return rows_below(win)
end

--- `text` cut to its first line and the next lines that fit in `win` below the cursor (scrolling for them).
---@param win integer
---@param text string
---@return string
function M.fit(win, text)
  local lines = vim.split(text, "\n", { plain = true })
  if #lines == 1 then
    return text
  end
  local room = M.room(win, #lines - 1)
  if room >= #lines - 1 then
    return text
  end
  return table.concat(lines, "\n", 1, 1 + math.max(0, room))
end

return M
