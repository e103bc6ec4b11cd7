-- Edits: an instruction over a range, sent as `workspace/executeCommand` `tandem.edit`
-- {uri, range, instruction}. The server computes the edit and applies it with
-- `workspace/applyEdit`, which Neovim handles itself (as it does the `$/progress` of long edits).
--
-- Three ways in: `:[range]TandemEdit [instruction]`; the server's preset code actions ("tandem: Fix", ...,
-- whose `tandem.edit` command passes through this module on its way to the server); and its "Edit
-- selection with tandem..." code action, whose client-side command `tandem.editSelection` asks for the
-- instruction with `vim.ui.input`. Both commands are registered on tandem's client (`client_commands`).
-- When an edit ends, `User TandemEditDone` fires with the server's answer as its data
-- ({applied, message, tier, route, files, ...}, or {applied = false, message} on an error).

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

local function finished(result)
  vim.api.nvim_exec_autocmds("User", { pattern = "TandemEditDone", modeline = false, data = result })
end

--- Send one `tandem.edit` argument ({uri, range, instruction, ...}) for `bufnr`; `done(err, result)`.
---@param bufnr integer
---@param argument table
---@param done fun(err: string|nil, result: any)|nil
function M.send_argument(bufnr, argument, done)
  done = done or function() end
  local client = client_mod.get(bufnr)
  local function refuse(message)
    vim.notify(message, vim.log.levels.WARN)
    finished({ applied = false, message = message })
    return done(message)
  end
  if not client then
    return refuse("tandem is not running in this buffer (see :checkhealth tandem)")
  end
  if not client_mod.offers_command(client, M.command) then
    return refuse("this tandem server does not offer edits (" .. M.command .. ") yet; upgrade tandem")
  end
  status.update({ state = "editing" })
  -- A request, not client:exec_cmd: this module is also the client-side handler of `tandem.edit`.
  local params = { command = M.command, arguments = { argument } }
  client:request("workspace/executeCommand", params, function(err, result)
    if err then
      status.update({ state = "ready", message = err.message })
      vim.notify("tandem edit: " .. err.message, vim.log.levels.ERROR)
      finished({ applied = false, message = err.message })
      return done(err.message, nil)
    end
    status.update({ state = "ready" })
    finished(result)
    done(nil, result)
  end, bufnr)
end

--- Send `tandem.edit` for `range` of `bufnr` with `instruction`. `done(err, result)` is called with the
--- answer. The server reports an edit it could not apply with `window/showMessage` (which Neovim shows);
--- an error of the request itself (bad arguments, no instruction) is shown here.
---@param bufnr integer
---@param range table lsp.Range
---@param instruction string
---@param done fun(err: string|nil, result: any)|nil
function M.send(bufnr, range, instruction, done)
  M.send_argument(bufnr, {
    uri = vim.uri_from_bufnr(bufnr),
    range = range,
    instruction = instruction,
  }, done)
end

--- Ask for the instruction with `vim.ui.input`, then send the edit.
---@param bufnr integer
---@param range table lsp.Range
local function prompt_and_send(bufnr, range)
  vim.ui.input({ prompt = "tandem edit: " }, function(instruction)
    if instruction and vim.trim(instruction) ~= "" then
      M.send(bufnr, range, vim.trim(instruction))
    end
  end)
end

--- `tandem.editSelection`, the command of the server's "Edit selection with tandem..." code action:
--- asks for the instruction, then edits the range the code action was asked for. The range is the
--- command's own argument when the server gives one, else the code action request's (`ctx.params`).
---@param command table lsp.Command
---@param ctx table the handler context Neovim passes (bufnr, client_id, params of the code action request)
function M.edit_selection(command, ctx)
  local argument = type(command.arguments) == "table" and command.arguments[1] or nil
  local bufnr = ctx.bufnr
  if type(argument) == "table" and type(argument.uri) == "string" then
    bufnr = vim.uri_to_bufnr(argument.uri)
  end
  local range = type(argument) == "table" and argument.range or (ctx.params and ctx.params.range)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if type(range) ~= "table" then
    local client = client_mod.get(bufnr)
    if not client then
      vim.notify("tandem is not running in this buffer (see :checkhealth tandem)", vim.log.levels.WARN)
      return
    end
    local line = vim.api.nvim_win_get_cursor(0)[1]
    range = M.range(client, bufnr, line, line)
  end
  prompt_and_send(bufnr, range)
end

--- `tandem.edit` run from a code action (the server's presets): sent on through `send_argument`, so the
--- statusline, `User TandemEditDone` and error messages work as for `:TandemEdit`.
---@param command table lsp.Command
---@param ctx table
local function edit_from_code_action(command, ctx)
  local argument = type(command.arguments) == "table" and command.arguments[1] or nil
  local bufnr = ctx.bufnr
  if type(argument) == "table" and type(argument.uri) == "string" then
    bufnr = vim.uri_to_bufnr(argument.uri)
  end
  M.send_argument(bufnr or vim.api.nvim_get_current_buf(), argument or {})
end

--- The client-side commands of tandem's client (`commands` of `vim.lsp.start`).
---@return table<string, fun(command: table, ctx: table)>
function M.client_commands()
  return { [M.command] = edit_from_code_action, ["tandem.editSelection"] = M.edit_selection }
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
  if vim.trim(args.args) ~= "" then
    M.send(bufnr, range, vim.trim(args.args))
  else
    prompt_and_send(bufnr, range)
  end
end

return M
