-- The screen a user sees: this (headless) Neovim runs a second Neovim, with the tandem plugin and the
-- README's statusline, in a terminal buffer; the terminal's lines are what that Neovim drew (its real
-- redraws, through libvterm), unlike the extmark reads of scenarios.lua. Run by
-- tests/editors/test_editor_neovim_screen.py:
--
--   TANDEM_TEST_SPEC=spec.json nvim --headless --clean -c 'luafile THIS'
--
-- spec.json: { result_path, nvim, plugin, setup (for require("tandem").setup), path (the file to open),
-- steps (each one of: send = keys for the terminal, run = Lua for the inner Neovim, shell = a command to
-- run, wait = text on the
-- screen, wait_gone, wait_eval = a Lua expression the inner Neovim must find true; record = a name to keep
-- the screen, buffer, cursor, mode and `eval` under), init_lua (lines of the user's init before setup),
-- keys (typed in insert mode at its end), ghost (text the ghost must show), server_log, artifacts } or, for a
-- plugin with no server to run, expect_on_screen (text the screen must show after the file opens).

local spec = vim.json.decode(table.concat(vim.fn.readfile(assert(os.getenv("TANDEM_TEST_SPEC"))), "\n"))
local results = {}

local function finish()
  vim.fn.writefile({ vim.json.encode(results) }, spec.result_path)
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local inner_init = vim.fn.tempname() .. ".lua"
  -- What else the user's init holds (an auto-pair mapping, options) goes before tandem's setup.
  vim.fn.writefile(vim.list_extend({
    "vim.o.laststatus = 2",
    -- The README's statusline, as written there (unless the spec says the user has none).
    spec.statusline == false and "" or [[vim.o.statusline = "%f %= %{v:lua.require'tandem'.statusline()}"]],
  }, vim.list_extend(vim.deepcopy(spec.init_lua or {}), {
    "require('tandem').setup(vim.json.decode(" .. string.format("%q", vim.json.encode(spec.setup)) .. "))",
  })), inner_init)
  local buf = vim.api.nvim_get_current_buf()
  -- The inner Neovim listens on a socket: steps read its buffer, cursor and drawn cells from it.
  local address = vim.fn.tempname() .. ".sock"
  local chan = vim.fn.jobstart(
    { spec.nvim, "--clean", "--listen", address, "--cmd", "set rtp^=" .. spec.plugin, "-u", inner_init, spec.path },
    { term = true, env = { TERM = "xterm-256color" } }
  )
  assert(chan > 0, "the inner Neovim did not start")
  local function screen()
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  local function statusline()
    local lines = screen()
    for i = #lines, 1, -1 do
      -- The statusline row starts with the file's name (`%f`); a message may name the file too.
      if vim.startswith(lines[i], vim.fs.basename(spec.path)) then
        return lines[i]
      end
    end
    return ""
  end
  local function shows(text)
    return table.concat(screen(), "\n"):find(text, 1, true) ~= nil
  end
  local function wait(what, timeout_ms, cond)
    if not vim.wait(timeout_ms, cond, 10) then
      error("timed out waiting for " .. what .. "; the screen:\n" .. table.concat(screen(), "\n"))
    end
  end
  if spec.expect_on_screen then
    -- The plugin with no server to run: what the user is told, on the screen.
    wait(vim.inspect(spec.expect_on_screen) .. " on screen", 30000, function()
      -- A message longer than the screen is wrapped onto its next row.
      return table.concat(screen(), ""):find(spec.expect_on_screen, 1, true) ~= nil
    end)
    results.error_framing = shows("Error detected while processing")
    results.screen = screen()
    if spec.artifacts then
      vim.fn.mkdir(spec.artifacts, "p")
      vim.fn.writefile(results.screen, spec.artifacts .. "/neovim-screen-missing-server.txt")
    end
    return
  end
  -- The server is up once its log has its first line (not read from the statusline, which is the thing
  -- under test).
  wait("the tandem server to start", 60000, function()
    if spec.server_log == nil then
      return true -- the server's own command, with no log file: the steps wait for the client instead
    end
    local log = vim.fn.filereadable(spec.server_log) == 1 and table.concat(vim.fn.readfile(spec.server_log), "\n") or ""
    return log:find("tandem serving", 1, true) ~= nil
  end)
  results.status_before = vim.trim(statusline())
  if spec.steps then
    -- Keys in; screen, buffer, cursor and file out, step by step (each step waits for what it names).
    local rpc = 0
    wait("the inner Neovim's socket", 30000, function()
      local ok, chan_id = pcall(vim.fn.sockconnect, "pipe", address, { rpc = true })
      rpc = ok and chan_id or 0
      return rpc > 0
    end)
    -- The socket listens before the inner Neovim has read its --cmd and init (a request then finds no
    -- plugin on the runtimepath): steps start once it has entered its first window.
    wait("the inner Neovim to finish starting", 30000, function()
      return vim.rpcrequest(rpc, "nvim_get_vvar", "vim_did_enter") == 1
    end)
    local function inner(expr)
      return vim.rpcrequest(rpc, "nvim_exec_lua", "return " .. expr, {})
    end
    results.records = {}
    for index, step in ipairs(spec.steps) do
      local what = string.format("step %d %s", index, vim.inspect(step))
      if step.send then
        vim.api.nvim_chan_send(chan, step.send)
      elseif step.shell then
        -- A command run to its end (the simulator's control API: arm or clear a fault).
        local done = vim.system(step.shell):wait()
        assert(done.code == 0, what .. ": " .. tostring(done.stderr))
      elseif step.run then
        -- Lua run in the inner Neovim (what a plugin or the user's config would call).
        vim.rpcrequest(rpc, "nvim_exec_lua", step.run, {})
      elseif step.wait then
        wait(what, step.timeout_ms or 30000, function()
          return table.concat(screen(), "\n"):find(step.wait, 1, true) ~= nil
        end)
      elseif step.wait_gone then
        wait(what, step.timeout_ms or 10000, function()
          return table.concat(screen(), "\n"):find(step.wait_gone, 1, true) == nil
        end)
      elseif step.wait_eval then
        wait(what, step.timeout_ms or 30000, function()
          return inner(step.wait_eval) == true
        end)
      end
      if step.record then
        results.records[step.record] = {
          screen = screen(),
          buffer = inner("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"),
          cursor = inner("vim.api.nvim_win_get_cursor(0)"),
          mode = inner("vim.api.nvim_get_mode().mode"),
          window = inner("{ vim.fn.line('w0'), vim.fn.line('w$') }"),
          statusline = vim.trim(statusline()),
          eval = step.eval and inner(step.eval) or nil,
        }
        if spec.artifacts then
          vim.fn.mkdir(spec.artifacts, "p")
          vim.fn.writefile(screen(), spec.artifacts .. "/neovim-screen-" .. step.record .. ".txt")
        end
      end
    end
    vim.fn.chanclose(rpc)
    vim.api.nvim_chan_send(chan, "\27:qa!\r")
    return
  end
  if spec.before_keys then
    -- Normal-mode keys first (`Gzb`: the last line on the window's bottom row), seen on screen.
    vim.api.nvim_chan_send(chan, spec.before_keys)
    wait("the cursor line at the bottom", 10000, function()
      local lines = screen()
      return lines[#lines - 2] ~= nil and lines[#lines - 2]:find(spec.last_line, 1, true) ~= nil
    end)
  end
  if spec.edit_keys then
    -- An edit (`:TandemEdit` on a selection): its message on screen, then the statusline after it.
    vim.api.nvim_chan_send(chan, spec.edit_keys)
    wait("the edit's message on screen", 60000, function()
      return table.concat(screen(), ""):find(spec.edit_message, 1, true) ~= nil
    end)
    results.status_at_message = vim.trim(statusline())
    vim.wait(3000, function()
      return statusline():find("editing", 1, true) == nil
    end, 10)
    results.status_after = vim.trim(statusline())
    results.screen = screen()
    if spec.artifacts then
      vim.fn.mkdir(spec.artifacts, "p")
      vim.fn.writefile(results.screen, spec.artifacts .. "/neovim-screen-after-edit.txt")
    end
    vim.api.nvim_chan_send(chan, "\27:qa!\r")
    return
  end
  vim.api.nvim_chan_send(chan, "GA" .. spec.keys)
  if spec.accept_and_write then
    -- The answer is in once the statusline shows its latency (the ghost text may be drawn off screen: that
    -- is what is checked).
    wait("the answer's latency in the statusline", 30000, function()
      return statusline():find("tandem %d+ ms") ~= nil
    end)
  else
    wait("the ghost text on screen", 30000, function()
      return shows(spec.ghost)
    end)
  end
  results.status_at_ghost = vim.trim(statusline())
  if spec.accept_and_write then
    -- What was on screen when Tab was pressed, then Tab, then the buffer written for the test to read.
    results.screen_at_tab = screen()
    vim.api.nvim_chan_send(chan, "\t\27:w\r")
    wait("the file written", 10000, function()
      return shows("written")
    end)
    results.screen_after = screen()
    if spec.artifacts then
      vim.fn.mkdir(spec.artifacts, "p")
      vim.fn.writefile(results.screen_at_tab, spec.artifacts .. "/neovim-screen-bottom-at-tab.txt")
    end
    vim.api.nvim_chan_send(chan, ":qa!\r")
    return
  end
  -- The server's answer reached the plugin before the ghost was drawn: the statusline should say so now.
  -- Waited for (up to 3 s) rather than read once, so that a statusline that lags a redraw still passes.
  vim.wait(3000, function()
    return statusline():find("tandem %d+ ms") ~= nil
  end, 10)
  results.status_after = vim.trim(statusline())
  results.screen = screen()
  if spec.artifacts then
    vim.fn.mkdir(spec.artifacts, "p")
    vim.fn.writefile(results.screen, spec.artifacts .. "/neovim-screen-statusline.txt")
  end
  vim.api.nvim_chan_send(chan, "\27:qa!\r")
end)
if not ok then
  results.error = tostring(err)
end
finish()
