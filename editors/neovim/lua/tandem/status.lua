-- What the statusline shows: the server's state, the last completion's latency, the last problem.
--
-- Fed by client.lua (start, exit, `window/showMessage`, the `tandem/status` notification when the server
-- sends one) and by suggest.lua (request sent, answered, failed).

local M = {}

---@class tandem.Status
---@field state string          "off" | "starting" | "ready" | "waiting" | "error"
---@field latency_ms number|nil the last answered request, round trip as the editor saw it
---@field message string|nil    the last warning or error, in the server's words
---@field server table|nil      the last `tandem/status` payload (route, cache hit, ...)
local status = { state = "off", latency_ms = nil, message = nil, server = nil }

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

--- A short text for 'statusline', e.g. `tandem 42ms`, `tandem …`, `tandem ⚠ no model configured`.
---@return string
function M.statusline()
  local s = status
  if s.state == "off" then
    return ""
  elseif s.state == "starting" then
    return "tandem …starting"
  elseif s.state == "waiting" then
    return "tandem …"
  elseif s.state == "error" then
    return "tandem ⚠ " .. (s.message or "error")
  end
  local text = "tandem"
  if s.latency_ms then
    text = text .. string.format(" %dms", math.floor(s.latency_ms + 0.5))
  end
  if s.server and s.server.source then
    text = text .. " " .. tostring(s.server.source)
  end
  if s.message then
    text = text .. " ⚠"
  end
  return text
end

return M
