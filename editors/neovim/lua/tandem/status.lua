-- What the statusline shows: the server's state, the last completion's latency and route, the last problem.
--
-- Fed by client.lua (start, exit, `window/showMessage`, the server's `tandem/status` notification), by
-- suggest.lua (request sent, answered, failed) and by edit.lua (edit sent, finished).
--
-- `tandem/status` (server -> client, after a completion request): the server composes `text` (short, for
-- the statusline) and `tooltip` (a sentence or two, for `:TandemStatus`); this module shows them and reads
-- no other field, so new fields need no change here (the shape is `lsp/status.py`'s `Status`).

local M = {}

---@class tandem.Status
---@field state string            "off" | "starting" | "ready" | "waiting" | "editing" | "error"
---@field round_trip_ms number|nil the last answered completion request, as the editor timed it
---@field message string|nil      the last warning or error, in the server's words
---@field server table|nil        the last `tandem/status` payload (text, tooltip, and the same facts as data)
local status = { state = "off", round_trip_ms = nil, message = nil, server = nil }

--- A copy of the current status.
---@return tandem.Status
function M.get()
  return vim.deepcopy(status)
end

---@param fields table  fields of tandem.Status to overwrite (`vim.NIL` clears one)
function M.update(fields)
  for key, value in pairs(fields) do
    if value == vim.NIL then
      status[key] = nil
    else
      status[key] = value
    end
  end
  -- Let statusline plugins redraw on our schedule rather than polling, and redraw a plain 'statusline'
  -- (the README's): Neovim redraws it on its own only when the cursor moves or the mode changes, so in
  -- insert mode it said `tandem …` after the ghost text was drawn, and `tandem editing…` after the edit.
  vim.schedule(function()
    vim.api.nvim_exec_autocmds("User", { pattern = "TandemStatus", modeline = false })
    vim.cmd("redrawstatus!")
  end)
end

--- A `tandem/status` notification from the server.
---@param payload table
function M.from_server(payload)
  if type(payload) ~= "table" then
    return
  end
  -- A request the server answered without a failure: the last problem (an outage, a refused request) is
  -- over, and the statusline's `⚠` with it (it stayed for good after one outage); `:messages` keeps it.
  local over = payload.state == "ready" and vim.NIL or nil
  M.update({ server = payload, message = over })
end

--- A short text for 'statusline': the server's own `text` (`tandem 42 ms fast`, `tandem 3 ms cached`,
--- `tandem ⚠ rate limited by the provider`), or the editor's state while there is none to show
--- (`tandem …starting`, `tandem …`, `tandem editing…`, `tandem ⚠ <problem>`).
---@return string
function M.statusline()
  local s = status
  if s.state == "off" then
    return ""
  elseif s.state == "starting" then
    return "tandem …starting"
  elseif s.state == "waiting" then
    return "tandem …"
  elseif s.state == "editing" then
    return "tandem editing…"
  elseif s.state == "error" then
    return "tandem ⚠ " .. (s.message or "error")
  end
  local server = s.server or {}
  local text = type(server.text) == "string" and server.text or "tandem"
  if s.message then
    text = text .. " ⚠"
  end
  return text
end

--- What `:TandemStatus` prints: the state, the server's own words for the last request, the last problem.
---@return string
function M.describe()
  local s = status
  local lines = {}
  local states = {
    off = "not running",
    starting = "starting",
    ready = "ready",
    waiting = "asking for a suggestion",
    editing = "editing",
    error = "stopped",
  }
  table.insert(lines, "tandem: " .. (states[s.state] or s.state))
  local server = s.server or {}
  if type(server.tooltip) == "string" and server.tooltip ~= "" then
    table.insert(lines, server.tooltip)
  end
  if s.round_trip_ms then
    table.insert(lines, string.format("Round trip seen by Neovim: %d ms.", math.floor(s.round_trip_ms + 0.5)))
  end
  if s.message then
    table.insert(lines, "Last problem: " .. s.message)
  end
  return table.concat(lines, "\n")
end

return M
