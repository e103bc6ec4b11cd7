-- `:TandemEdit`: an instruction over the selected range, sent as `workspace/executeCommand` `tandem.edit`
-- {uri, range, instruction}. The server computes the edit and applies it with `workspace/applyEdit`,
-- which Neovim handles itself (as it does the `$/progress` of long edits).

local client_mod = require("tandem.client")
local status = require("tandem.status")

local M = {}

M.command = "tandem.edit"

--- LSP range (in the client's encoding) of lines `line1`..`line2` (1-based, inclusive), narrowed to the
--- characterwise visual selection when the last visual selection is exactly those lines.
---@param client vim.lsp.Client
---@param bufnr integer
---@param line1 integer
---@param line2 integer
---@return table lsp.Range
function M.range(client, bufnr, line1, line2)
  local enc = client.offset_encoding
  local function character(row, byte_col)
    local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
    byte_col = math.min(byte_col, #line)
    local ok, index = pcall(vim.str_utfindex, line, enc, byte_col, false)
    return ok and index or byte_col
  end
  local vstart = vim.api.nvim_buf_get_mark(bufnr, "<")
  local vend = vim.api.nvim_buf_get_mark(bufnr, ">")
  if vim.fn.visualmode() == "v" and vstart[1] == line1 and vend[1] == line2 then
    local end_line = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
    -- The end mark is on the last selected character; the range ends after it (whole UTF-8 sequence).
    local end_byte = math.min(vend[2], #end_line)
    local after = end_byte < #end_line and (vim.str_utf_end(end_line, end_byte + 1) + end_byte + 1) or #end_line
    return {
      start = { line = line1 - 1, character = character(line1 - 1, vstart[2]) },
      ["end"] = { line = line2 - 1, character = character(line2 - 1, after) },
    }
  end
  -- Linewise: from the start of the first line to the start of the line after the last.
  if line2 < vim.api.nvim_buf_line_count(bufnr) then
    return { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2, character = 0 } }
  end
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
  return {
    start = { line = line1 - 1, character = 0 },
    ["end"] = { line = line2 - 1, character = character(line2 - 1, #last) },
  }
end

--- Send `tandem.edit` for `range` with `instruction`. `done(err, result)` is called with the answer.
---@param bufnr integer
---@param range table lsp.Range
---@param instruction string
---@param done fun(err: string|nil, result: any)|nil
function M.send(bufnr, range, instruction, done)
  done = done or function() end
  local client = client_mod.get(bufnr)
  if not client then
    local message = "tandem is not running in this buffer (see :checkhealth tandem)"
    vim.notify(message, vim.log.levels.WARN)
    return done(message)
  end
  if not client_mod.offers_command(client, M.command) then
    local message = "this tandem server does not offer edits (" .. M.command .. ") yet; upgrade tandem"
    vim.notify(message, vim.log.levels.WARN)
    return done(message)
  end
  status.update({ state = "waiting" })
  local arguments = { { uri = vim.uri_from_bufnr(bufnr), range = range, instruction = instruction } }
  client:exec_cmd({ title = "tandem edit", command = M.command, arguments = arguments }, { bufnr = bufnr }, function(err, result)
    if err then
      status.update({ state = "ready", message = err.message })
      vim.notify("tandem edit: " .. err.message, vim.log.levels.ERROR)
      return done(err.message, nil)
    end
    status.update({ state = "ready" })
    done(nil, result)
  end)
end

--- The `:[range]TandemEdit [instruction]` command: asks for the instruction when none is given.
---@param args table the user command's arguments
function M.command_handler(args)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_mod.get(bufnr)
  if not client then
    vim.notify("tandem is not running in this buffer (see :checkhealth tandem)", vim.log.levels.WARN)
    return
  end
  local line1, line2 = args.line1, args.line2
  if args.range == 0 then
    line1 = vim.api.nvim_win_get_cursor(0)[1]
    line2 = line1
  end
  local range = M.range(client, bufnr, line1, line2)
  local function go(instruction)
    if instruction and vim.trim(instruction) ~= "" then
      M.send(bufnr, range, vim.trim(instruction))
    end
  end
  if args.args ~= "" then
    go(args.args)
  else
    vim.ui.input({ prompt = "tandem edit: " }, go)
  end
end

return M
