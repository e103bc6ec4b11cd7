-- Starting `tandem serve` for a buffer with `vim.lsp.start`, and the requests the plugin sends it.
--
-- One client per project root (Neovim reuses a client whose name and root match), attached beside
-- whatever other language servers the buffer has.

local status = require("tandem.status")

local M = {}

M.name = "tandem"

---@type tandem.Config|nil
local cfg = nil
---@type fun(client: vim.lsp.Client, bufnr: integer)|nil
local on_attach_hook = nil

---@param config tandem.Config
---@param on_attach fun(client: vim.lsp.Client, bufnr: integer)
function M.setup(config, on_attach)
  cfg = config
  on_attach_hook = on_attach
end

--- Whether tandem should run in `bufnr` at all.
---@param bufnr integer
---@return boolean
function M.wanted(bufnr)
  if not cfg or not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return false
  end
  local ft = vim.bo[bufnr].filetype
  if vim.tbl_contains(cfg.exclude_filetypes, ft) then
    return false
  end
  return cfg.filetypes == nil or vim.tbl_contains(cfg.filetypes, ft)
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- Neovim 0.11 does not announce inline completion itself; this plugin renders it.
  caps.textDocument = caps.textDocument or {}
  caps.textDocument.inlineCompletion = caps.textDocument.inlineCompletion or { dynamicRegistration = false }
  return caps
end

-- The server's messages already begin with "tandem:"; they go through vim.notify (which notification
-- plugins take over) at their own level, not through Neovim's "LSP[tandem][Info] ..." echo.
local NOTIFY_LEVELS = {
  [vim.lsp.protocol.MessageType.Error] = vim.log.levels.ERROR,
  [vim.lsp.protocol.MessageType.Warning] = vim.log.levels.WARN,
  [vim.lsp.protocol.MessageType.Info] = vim.log.levels.INFO,
  [vim.lsp.protocol.MessageType.Log] = vim.log.levels.DEBUG,
}

local function show_message(err, result, ctx)
  if err or type(result) ~= "table" or type(result.message) ~= "string" then
    return vim.lsp.handlers["window/showMessage"](err, result, ctx)
  end
  if result.type and result.type <= vim.lsp.protocol.MessageType.Warning then
    status.update({ message = result.message })
  end
  vim.notify(result.message, NOTIFY_LEVELS[result.type] or vim.log.levels.INFO)
  return result
end

-- Neovim prints "Workspace edit <label>" for every edit with a label; the server's own message about the
-- edit (which model, which file, how many lines) already says it, so the label is not passed on.
local function apply_edit(err, params, ctx)
  if type(params) == "table" and params.label then
    params = vim.tbl_extend("force", {}, params)
    params.label = nil
  end
  return vim.lsp.handlers["workspace/applyEdit"](err, params, ctx)
end

local notified_missing = false

local function server_status(_, result)
  status.from_server(result)
end

--- Start tandem for `bufnr` (or attach the running client of its project). Returns the client id.
---@param bufnr integer
---@return integer|nil
function M.start(bufnr)
  if not cfg or not M.wanted(bufnr) then
    return nil
  end
  local root = vim.fs.root(bufnr, cfg.root_markers) or vim.fn.getcwd()
  if vim.fn.executable(cfg.cmd[1]) ~= 1 then
    local message = "cannot run " .. cfg.cmd[1] .. " (see :checkhealth tandem)"
    status.update({ state = "error", message = message })
    -- Said once, not only in a statusline the user may not have set up; scheduled, so that it is not
    -- framed as an error in the autocommand that opened the buffer.
    if not notified_missing then
      notified_missing = true
      vim.schedule(function()
        vim.notify("tandem: " .. message, vim.log.levels.WARN)
      end)
    end
    return nil
  end
  if status.get().state == "off" then
    status.update({ state = "starting" })
  end
  return vim.lsp.start({
    name = M.name,
    cmd = cfg.cmd,
    cmd_env = cfg.cmd_env,
    root_dir = root,
    init_options = cfg.init_options,
    settings = cfg.settings,
    capabilities = capabilities(),
    handlers = {
      ["window/showMessage"] = show_message,
      ["tandem/status"] = server_status,
      ["workspace/applyEdit"] = apply_edit,
    },
    -- Client-side commands the server's code actions name: "Edit selection with tandem..." prompts here.
    -- Kept on this client (not in the global vim.lsp.commands) so no other server can invoke them.
    commands = require("tandem.edit").client_commands(),
    on_init = function(client)
      status.update({ state = "ready" })
      if next(cfg.settings) ~= nil then
        client:notify("workspace/didChangeConfiguration", { settings = cfg.settings })
      end
    end,
    on_attach = function(client, attached)
      if on_attach_hook then
        on_attach_hook(client, attached)
      end
    end,
    on_exit = function(code, signal)
      if code ~= 0 or (signal and signal ~= 0) then
        status.update({ state = "error", message = string.format("server exited (code %d)", code) })
      else
        status.update({ state = "off" })
      end
    end,
  }, { bufnr = bufnr })
end

--- The tandem client attached to `bufnr`, if any.
---@param bufnr integer
---@return vim.lsp.Client|nil
function M.get(bufnr)
  return vim.lsp.get_clients({ name = M.name, bufnr = bufnr })[1]
end

--- LSP position of the cursor in window `win`, in the client's negotiated encoding.
---@param client vim.lsp.Client
---@param win integer
function M.position_params(client, win)
  return vim.lsp.util.make_position_params(win, client.offset_encoding)
end

--- Byte column in `line` of an LSP `character` in the client's encoding.
---@param client vim.lsp.Client
---@param line string
---@param character integer
---@return integer
function M.byte_col(client, line, character)
  local ok, col = pcall(vim.str_byteindex, line, client.offset_encoding, character, false)
  return ok and col or #line
end

--- Send `textDocument/inlineCompletion` at the cursor. Returns the request id (for `cancel`).
---@param client vim.lsp.Client
---@param bufnr integer
---@param invoked boolean  true when the user asked (trigger key), false while typing
---@param handler fun(err: table|nil, result: table|nil)
---@return integer|nil
function M.inline_completion(client, bufnr, invoked, handler)
  local params = M.position_params(client, vim.fn.bufwinid(bufnr))
  -- InlineCompletionTriggerKind: 1 Invoked, 2 Automatic.
  params.context = { triggerKind = invoked and 1 or 2 }
  local ok, id = client:request("textDocument/inlineCompletion", params, handler, bufnr)
  return ok and id or nil
end

--- Cancel request `id` if its answer has not arrived yet. Neovim's `cancel_request` sends `$/cancelRequest`
--- even for a request already answered (its handler not yet run); the server then logged a warning per
--- keystroke, which Neovim's lsp.log kept as an ERROR line (it logs a server's stderr at that level).
---@param client vim.lsp.Client
---@param id integer|nil
function M.cancel(client, id)
  local request = id and client.requests[id]
  if request and request.type == "pending" then
    client:cancel_request(id)
  end
end

--- Whether the server offers a `workspace/executeCommand` command by this name.
---@param client vim.lsp.Client
---@param command string
---@return boolean
function M.offers_command(client, command)
  local provider = client.server_capabilities.executeCommandProvider
  return type(provider) == "table" and vim.tbl_contains(provider.commands or {}, command)
end

return M
