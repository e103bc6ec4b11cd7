-- `:checkhealth tandem`: what is missing between this Neovim and a completion on screen.

local M = {}

local function check_neovim()
  vim.health.start("Neovim")
  local v = vim.version()
  local text = string.format("%d.%d.%d", v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.11") == 1 then
    vim.health.ok("Neovim " .. text)
  else
    vim.health.error("Neovim " .. text .. " is too old", { "tandem needs Neovim 0.11 or newer" })
  end
  local tandem = require("tandem")
  if tandem.uses_builtin() then
    vim.health.ok("ghost text: built-in vim.lsp.inline_completion (accept_word/accept_line keys are not available)")
  else
    vim.health.ok("ghost text: tandem's own extmarks")
  end
end

---@param cfg tandem.Config
local function check_server(cfg)
  vim.health.start("Server")
  local exe = cfg.cmd[1]
  local path = vim.fn.exepath(exe)
  if path == "" then
    vim.health.error("cannot find `" .. exe .. "` (cmd = " .. vim.inspect(cfg.cmd) .. ")", {
      "install tandem from a checkout of its repository: cd tandem && pip install . (it is not on PyPI)",
      "or point setup{ cmd = { '/path/to/tandem', 'serve', '--log-to-client' } } at it",
    })
    return
  end
  vim.health.ok("server command: " .. table.concat(cfg.cmd, " ") .. " (" .. path .. ")")
  local probe = vim.list_extend(vim.deepcopy(cfg.cmd), { "--help" })
  local result = vim.system(probe, { text = true, env = cfg.cmd_env }):wait(20000)
  if result.code ~= 0 then
    vim.health.error("`" .. table.concat(probe, " ") .. "` failed: " .. vim.trim(result.stderr or ""), {
      "is tandem installed in the Python environment that this command runs?",
    })
  end
end

---@param cfg tandem.Config
local function check_models(cfg)
  vim.health.start("Models")
  local fast = vim.tbl_get(cfg.init_options, "models", "fast")
  if fast then
    vim.health.ok(
      string.format("fast model from setup{}: %s %s at %s", fast.provider or "?", fast.model or "?", fast.base_url or "?")
    )
    if fast.api_key_env and fast.api_key_env ~= "" and vim.env[fast.api_key_env] == nil then
      vim.health.warn("$" .. fast.api_key_env .. " is not set in Neovim's environment (the server inherits it)")
    end
    return
  end
  local config_home = vim.env.XDG_CONFIG_HOME or (vim.env.HOME .. "/.config")
  local user_config = config_home .. "/tandem/config.toml"
  if vim.uv.fs_stat(user_config) then
    vim.health.ok("models come from " .. user_config)
  else
    vim.health.warn("no model configured in setup{ init_options = { models = ... } } nor in " .. user_config, {
      "try the simulator: `tandem sim --profile spark` and set models.fast.base_url to the URL it prints",
      "see editors/neovim/README.md",
    })
  end
end

local function check_clients()
  vim.health.start("Running")
  local clients = vim.lsp.get_clients({ name = require("tandem.client").name })
  if #clients == 0 then
    vim.health.info("no tandem client is running (open a file of a configured filetype)")
  end
  for _, client in ipairs(clients) do
    local caps = client.server_capabilities or {}
    vim.health.ok(
      string.format(
        "client %d, root %s, position encoding %s, buffers %s",
        client.id,
        client.root_dir or "(none)",
        client.offset_encoding,
        table.concat(vim.tbl_keys(client.attached_buffers), ",")
      )
    )
    if not caps.inlineCompletionProvider then
      vim.health.error("the server does not offer textDocument/inlineCompletion: is this tandem?")
    end
  end
  local s = require("tandem.status").get()
  if s.message then
    vim.health.warn("last message from tandem: " .. s.message)
  end
end

function M.check()
  local tandem = require("tandem")
  local cfg = tandem.config()
  check_neovim()
  if not cfg then
    vim.health.error("require('tandem').setup{} has not been called", { "add it to your init.lua" })
    return
  end
  check_server(cfg)
  check_models(cfg)
  check_clients()
end

return M
