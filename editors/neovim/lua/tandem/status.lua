-- What the statusline shows: the server's state, the last completion's latency and route, the last problem.
--
-- Fed by client.lua (start, exit, `window/showMessage`, the server's `tandem/status` notification), by
-- suggest.lua (request sent, answered, failed) and by edit.lua (edit sent, finished).
--
-- `tandem/status` (server -> client, after each completion it answered with text or an error):
--   { state = "ready" | "error", latency_ms = 12.3, route = "fast" | "accurate", model = "...",
--     cache_hit = true, error = "..." | nil }

local M = {}

---@class tandem.Status
---@field state string            "off" | "starting" | "ready" | "waiting" | "editing" | "error"
---@field round_trip_ms number|nil the last answered completion request, as the editor timed it
---@field message string|nil      the last warning or error, in the server's words
---@field server table|nil        the last `tandem/status` payload (latency_ms, route, model, cache_hit, error)
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
  -- Let statusline plugins redraw on our schedule rather than polling.
  vim.schedule(function()
    vim.api.nvim_exec_autocmds("User", { pattern = "TandemStatus", modeline = false })
  end)
end

--- A `tandem/status` notification from the server.
---@param payload table
function M.from_server(payload)
  if type(payload) ~= "table" then
    return
  end
  M.update({ server = payload })
end

--- A short text for 'statusline': `tandem 42ms fast`, `tandem 0ms cache`, `tandem …`, `tandem editing…`,
--- `tandem ⚠ <error>`.
--- The latency and route are the server's (its `tandem/status`); before the server has sent one, the
--- editor's own round trip.
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
  if server.state == "error" and server.error then
    return "tandem ⚠ " .. tostring(server.error)
  end
  local text = "tandem"
  local latency_ms = tonumber(server.latency_ms) or s.round_trip_ms
  if latency_ms then
    text = text .. string.format(" %dms", math.floor(latency_ms + 0.5))
  end
  if server.cache_hit == true then
    text = text .. " cache"
  elseif type(server.route) == "string" then
    text = text .. " " .. server.route
  end
  if s.message then
    text = text .. " ⚠"
  end
  return text
end

return M
