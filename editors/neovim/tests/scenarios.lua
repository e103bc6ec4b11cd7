-- Drives the tandem plugin in a real (headless) Neovim, the way a user would: open a file, type, wait for
-- the ghost text, press keys. Run by tests/test_editor_neovim.py:
--
--   TANDEM_TEST_SPEC=spec.json nvim --headless --clean --cmd 'set rtp^=editors/neovim' -c 'luafile THIS'
--
-- spec.json: { result_path, setup = {...} (passed to require("tandem").setup), scenarios = [...] }.
-- Each scenario opens its file, enters insert mode at the end, types `type` and records what happened.
-- The result file holds one entry per scenario, or `error` (with what the editor showed) when a step
-- failed; pytest asserts on it.
--
-- Keys are fed as typeahead and handled by Neovim's main loop (that is what fires TextChangedI and runs
-- the insert-mode mappings), so the script runs as a coroutine that yields to the main loop while it
-- waits for a condition.

local spec_path = assert(os.getenv("TANDEM_TEST_SPEC"), "TANDEM_TEST_SPEC is not set")
local spec = vim.json.decode(table.concat(vim.fn.readfile(spec_path), "\n"))

local results = { scenarios = {}, notifications = {} }

vim.notify = function(message, level)
  table.insert(results.notifications, { message = tostring(message), level = level })
end

local function write_results()
  local file = assert(io.open(spec.result_path, "w"))
  file:write(vim.json.encode(results))
  file:close()
end

local driver

local function finish()
  -- Shut the server down the way an editor does (shutdown, exit) before quitting, so it ends cleanly.
  local clients = vim.lsp.get_clients()
  local stopping_ns = vim.uv.hrtime()
  for _, client in ipairs(clients) do
    client:stop()
  end
  -- A client leaves the list once its server process has exited.
  vim.wait(5000, function()
    return #vim.lsp.get_clients() == 0
  end, 10)
  results.servers_left_running = #vim.lsp.get_clients()
  results.shutdown_ms = (vim.uv.hrtime() - stopping_ns) / 1e6
  write_results()
  vim.cmd("qall!")
end

local function resume(...)
  local ok, err = coroutine.resume(driver, ...)
  if not ok then
    results.error = debug.traceback(driver, err)
    finish()
  elseif coroutine.status(driver) == "dead" then
    finish()
  end
end

local ghost = require("tandem.ghost")
local tandem_client = require("tandem.client")

local function buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
end

local function snapshot(bufnr)
  local shown = ghost.read(bufnr)
  return vim.inspect({
    mode = vim.api.nvim_get_mode().mode,
    cursor = vim.api.nvim_win_get_cursor(0),
    ghost = shown and shown.text or vim.NIL,
    status = require("tandem.status").get(),
    last_line = vim.api.nvim_buf_get_lines(bufnr, -2, -1, false)[1],
    notifications = results.notifications,
  })
end

--- Yield to Neovim's main loop until `cond()` is truthy (checked every few ms), or fail after `timeout_ms`.
local function wait_until(cond, timeout_ms, what, bufnr)
  local started = vim.uv.now()
  local timer = assert(vim.uv.new_timer())
  timer:start(
    0,
    5,
    vim.schedule_wrap(function()
      if timer:is_closing() then
        return
      end
      local ok, value = pcall(cond)
      local timed_out = vim.uv.now() - started > timeout_ms
      if (ok and value) or timed_out then
        timer:stop()
        timer:close()
        resume(ok and value or false, vim.uv.now() - started)
      end
    end)
  )
  local value, waited_ms = coroutine.yield()
  if not value then
    error(string.format("timed out after %d ms waiting for %s; editor state: %s", waited_ms, what, snapshot(bufnr)), 2)
  end
  return value
end

--- Feed keys as if typed (mappings apply); they run once the main loop gets them.
local function keys(text)
  vim.api.nvim_feedkeys(vim.keycode(text), "t", false)
end

local function ghost_text(bufnr)
  local shown = ghost.read(bufnr)
  return shown and shown.text or nil
end

local function open(path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  wait_until(function()
    local client = tandem_client.get(bufnr)
    return client ~= nil and client.initialized
  end, 30000, "the tandem client to start and attach", bufnr)
  return bufnr
end

--- Enter insert mode at the end of the buffer, type the scenario's text, wait for ghost text.
local function type_and_wait(bufnr, scenario)
  keys("GA" .. scenario.type)
  local typed_line = vim.api.nvim_buf_get_lines(bufnr, -2, -1, false)[1]
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "i" and vim.endswith(vim.api.nvim_get_current_line(), scenario.type)
  end, 5000, "insert mode with the typed text", bufnr)
  local want = scenario.expect_ghost
  wait_until(function()
    local text = ghost_text(bufnr)
    if want then
      return text == want
    end
    return text ~= nil and text ~= ""
  end, scenario.timeout_ms or 15000, want and ("ghost text " .. vim.inspect(want)) or "any ghost text", bufnr)
  return typed_line
end

local function press_and_wait_for_change(bufnr, key, what)
  local tick = vim.b[bufnr].changedtick
  keys(key)
  wait_until(function()
    return vim.b[bufnr].changedtick ~= tick
  end, 5000, what, bufnr)
end

local runners = {}

-- Type, see the ghost text, accept it all with the accept key, then leave insert mode.
function runners.accept(bufnr, scenario, out)
  type_and_wait(bufnr, scenario)
  out.ghost = ghost_text(bufnr)
  out.statusline = require("tandem").statusline()
  press_and_wait_for_change(bufnr, scenario.key or "<Tab>", "the accept key to insert the suggestion")
  out.after_accept = buffer_text(bufnr)
  out.cursor_after_accept = vim.api.nvim_win_get_cursor(0)
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
  out.ghost_after_esc = ghost_text(bufnr) or vim.NIL
end

-- Type, see the ghost text, accept one word, then the rest of the line.
function runners.partial(bufnr, scenario, out)
  type_and_wait(bufnr, scenario)
  out.ghost = ghost_text(bufnr)
  press_and_wait_for_change(bufnr, scenario.word_key or "<M-Right>", "the accept-word key to insert a word")
  out.after_word = buffer_text(bufnr)
  out.ghost_after_word = ghost_text(bufnr) or vim.NIL
  press_and_wait_for_change(bufnr, scenario.line_key or "<M-Down>", "the accept-line key to insert the line")
  out.after_line = buffer_text(bufnr)
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
end

-- Type, see the ghost text, then type its first characters: the rest stays shown.
function runners.through(bufnr, scenario, out)
  type_and_wait(bufnr, scenario)
  out.ghost = ghost_text(bufnr)
  local typed = out.ghost:sub(1, 3)
  keys(typed)
  wait_until(function()
    return ghost_text(bufnr) == out.ghost:sub(4)
  end, 5000, "the ghost text to keep what was not typed yet", bufnr)
  out.ghost_after_typing = ghost_text(bufnr)
  press_and_wait_for_change(bufnr, "<Tab>", "the accept key to insert the rest")
  out.after_accept = buffer_text(bufnr)
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
end

-- Type, see the ghost text, press Esc: the ghost text goes, the buffer keeps only what was typed.
function runners.dismiss(bufnr, scenario, out)
  type_and_wait(bufnr, scenario)
  out.ghost = ghost_text(bufnr)
  local before = buffer_text(bufnr)
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n" and ghost_text(bufnr) == nil
  end, 5000, "Esc to remove the ghost text", bufnr)
  out.buffer_unchanged = buffer_text(bufnr) == before
end

-- `:TandemEdit` on the first line: the command reaches the server, or says why it cannot.
function runners.edit(bufnr, scenario, out)
  local client = assert(tandem_client.get(bufnr))
  out.server_offers_edit = tandem_client.offers_command(client, "tandem.edit")
  local before = #results.notifications
  local done = false
  require("tandem.edit").send(bufnr, {
    start = { line = 0, character = 0 },
    ["end"] = { line = 1, character = 0 },
  }, scenario.instruction, function(err)
    out.edit_error = err or vim.NIL
    done = true
  end)
  wait_until(function()
    return done
  end, 30000, "the edit command to finish", bufnr)
  out.notifications = vim.list_slice(results.notifications, before + 1)
  out.after_edit = buffer_text(bufnr)
end

-- `:checkhealth tandem` with the server running: the report's text.
function runners.health(_, _, out)
  vim.cmd("checkhealth tandem")
  out.report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("tabclose")
end

driver = coroutine.create(function()
  require("tandem").setup(spec.setup)
  for _, scenario in ipairs(spec.scenarios) do
    local out = { name = scenario.name }
    results.scenarios[#results.scenarios + 1] = out
    local started = vim.uv.hrtime()
    local bufnr = open(scenario.path)
    out.open_ms = (vim.uv.hrtime() - started) / 1e6
    runners[scenario.run](bufnr, scenario, out)
    out.elapsed_ms = (vim.uv.hrtime() - started) / 1e6
    out.done = true
  end
end)

vim.schedule(resume)
