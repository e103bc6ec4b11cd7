-- Drives the tandem plugin in a real (headless) Neovim, the way a user would: open a file, type, wait for
-- the ghost text, press keys. Run by tests/editors/test_editor_neovim.py:
--
--   TANDEM_TEST_SPEC=spec.json nvim --headless --clean --cmd 'set rtp^=editors/neovim' -c 'luafile THIS'
--
-- spec.json: { result_path, setup = {...} (passed to require("tandem").setup), set_edit_truth = [command],
-- scenarios = [...] }. A completion scenario opens its file, enters insert mode at the end, types `type`
-- and records what happened. An edit scenario first gives the simulators its edit truth (`set_edit_truth`
-- reads {files, errors} on stdin and posts it to their control API), selects lines `line1`..`line2`
-- linewise and runs the edit the way its `run` says.
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

-- A text capture of what the window shows (the lines around the cursor, the ghost text where its
-- extmark draws it, in TandemGhost's 256-colour escape, the statusline and the last message), written to
-- spec.artifacts as NAME.ansi. Rebuilt from the buffer and the extmarks: headless Neovim draws no screen.
local function capture(bufnr, name)
  if not spec.artifacts then
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local first = math.max(0, row - 8)
  local lines = vim.api.nvim_buf_get_lines(bufnr, first, row + 3, false)
  local hl = vim.api.nvim_get_hl(0, { name = "TandemGhost", link = false })
  local on = string.format("\27[3;38;5;%dm", hl.ctermfg or 244)
  local off = "\27[0m"
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, ghost.ns, 0, -1, { details = true })
  -- Right to left, so that a piece drawn further along its line does not shift the ones before it.
  table.sort(marks, function(a, b)
    return a[2] > b[2] or (a[2] == b[2] and a[3] > b[3])
  end)
  for _, mark in ipairs(marks) do
    local at, col, details = mark[2] - first + 1, mark[3], mark[4]
    if lines[at] then
      local text = details.virt_text and details.virt_text[1][1] or ""
      lines[at] = lines[at]:sub(1, col) .. on .. text .. off .. lines[at]:sub(col + 1)
      for i, virt_line in ipairs(details.virt_lines or {}) do
        table.insert(lines, at + i, on .. virt_line[1][1] .. off)
      end
    end
  end
  local last = results.notifications[#results.notifications]
  table.insert(lines, "")
  table.insert(lines, "[statusline] " .. require("tandem").statusline())
  table.insert(lines, "[message] " .. (last and last.message or ""))
  vim.fn.mkdir(spec.artifacts, "p")
  vim.fn.writefile(lines, spec.artifacts .. "/neovim-" .. name .. ".ansi")
end

local function cfg_key(name)
  return require("tandem").config().next_edit.keymaps[name]
end

-- Type, see the ghost text, accept it all with the accept key, then leave insert mode.
function runners.accept(bufnr, scenario, out)
  type_and_wait(bufnr, scenario)
  out.ghost = ghost_text(bufnr)
  -- The server's `tandem/status` follows its answer; the statusline shows it.
  wait_until(function()
    return require("tandem.status").get().server ~= nil
  end, 5000, "the server's tandem/status notification", bufnr)
  out.server_status = require("tandem.status").get().server
  out.statusline = require("tandem").statusline()
  out.tandem_status_command = vim.api.nvim_exec2("TandemStatus", { output = true }).output
  local mark = vim.api.nvim_buf_get_extmarks(bufnr, ghost.ns, 0, -1, { details = true })[1]
  out.ghost_hl = mark and mark[4].virt_text[1][2] or vim.NIL
  out.hl_ghost = vim.api.nvim_get_hl(0, { name = "TandemGhost", link = false })
  out.hl_comment = vim.api.nvim_get_hl(0, { name = "Comment", link = false })
  capture(bufnr, scenario.name .. "-first-completion")
  press_and_wait_for_change(bufnr, scenario.key or "<Tab>", "the accept key to insert the suggestion")
  out.after_accept = buffer_text(bufnr)
  capture(bufnr, scenario.name .. "-accepted")
  out.cursor_after_accept = vim.api.nvim_win_get_cursor(0)
  if scenario.expect_next then
    -- The accepted line is complete: the next line's suggestion follows without pressing Enter.
    wait_until(function()
      return ghost_text(bufnr) == scenario.expect_next
    end, 15000, "ghost text of the next line " .. vim.inspect(scenario.expect_next), bufnr)
    out.ghost_next = ghost_text(bufnr)
    capture(bufnr, scenario.name .. "-next-line")
  end
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
  out.ghost_after_esc = ghost_text(bufnr) or vim.NIL
end

--- The cursor's line as the window draws it: the buffer's text with the ghost text's inline pieces.
local function drawn_line(bufnr)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local marks = vim.api.nvim_buf_get_extmarks(bufnr, ghost.ns, { row, 0 }, { row, -1 }, { details = true })
  for i = #marks, 1, -1 do
    local col, chunks = marks[i][3], marks[i][4].virt_text or {}
    line = line:sub(1, col) .. (chunks[1] and chunks[1][1] or "") .. line:sub(col + 1)
  end
  return line
end

-- Issue 28 item 1: an autopair mapping as nvim-autopairs and mini.pairs make it (`(` inserts `()` and
-- steps back inside), `(` typed at the end of the file's last line; the ghost text is drawn around the
-- mapping's `)`, and Tab leaves the true line, without a stray `)`.
function runners.autopair(bufnr, scenario, out)
  vim.keymap.set("i", "(", "()<C-g>U<Left>", { buffer = bufnr })
  keys("GA(")
  wait_until(function()
    local line = vim.api.nvim_get_current_line()
    return vim.api.nvim_get_mode().mode == "i" and vim.endswith(line, "()")
      and vim.api.nvim_win_get_cursor(0)[2] == #line - 1
  end, 5000, "insert mode between the auto-paired brackets", bufnr)
  out.typed_line = vim.api.nvim_get_current_line()
  wait_until(function()
    local text = ghost_text(bufnr)
    return text ~= nil and vim.startswith(text, scenario.expect_first_line)
  end, 15000, "ghost text " .. vim.inspect(scenario.expect_first_line), bufnr)
  out.ghost = ghost_text(bufnr)
  out.drawn_line = drawn_line(bufnr)
  capture(bufnr, scenario.name .. "-first-completion")
  press_and_wait_for_change(bufnr, "<Tab>", "the accept key to insert the suggestion")
  out.after_accept = buffer_text(bufnr)
  capture(bufnr, scenario.name .. "-accepted")
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
end

-- Issue 28 item 2: the cursor on the window's bottom row (`zb`, in a window `height` rows tall), `type`
-- typed at the end of the file; the suggestion's lines must be on screen when Tab takes them: what Tab
-- inserts is what the window shows.
function runners.bottom(bufnr, scenario, out)
  vim.cmd("split")
  vim.cmd("resize " .. scenario.height)
  local win = vim.api.nvim_get_current_win()
  keys("Gzb")
  wait_until(function()
    return vim.fn.line(".") == vim.fn.line("$") and vim.fn.winline() == vim.api.nvim_win_get_height(win)
  end, 5000, "the cursor on the window's bottom row", bufnr)
  out.height = vim.api.nvim_win_get_height(win)
  out.winline_before = vim.fn.winline()
  local before = buffer_text(bufnr)
  keys("A" .. scenario.type)
  wait_until(function()
    local text = ghost_text(bufnr)
    return vim.api.nvim_get_mode().mode == "i" and text ~= nil and text:find("\n") ~= nil
  end, 15000, "a ghost text of more than one line", bufnr)
  out.ghost = ghost_text(bufnr)
  -- The screen rows under the cursor's line, where the suggestion's virtual lines are drawn.
  out.rows_below = vim.api.nvim_win_get_height(win) - vim.fn.winline()
  out.window = { vim.fn.line("w0"), vim.fn.line("w$") }
  capture(bufnr, scenario.name .. "-first-completion")
  press_and_wait_for_change(bufnr, "<Tab>", "the accept key to insert the suggestion")
  out.after_accept = buffer_text(bufnr)
  out.inserted = out.after_accept:sub(#before + #scenario.type + 1)
  capture(bufnr, scenario.name .. "-accepted")
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
  vim.cmd("only")
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

--- Give the simulators the edit truth of the next edit: {path as the server shows it: text after the edit}.
local function set_edit_truth(files)
  local done = vim.system(spec.set_edit_truth, { stdin = vim.json.encode({ files = files, errors = "off" }) }):wait()
  if done.code ~= 0 then
    error("setting the simulators' edit truth failed: " .. tostring(done.stderr), 2)
  end
end

--- Select lines `line1`..`line2` linewise, as a user does with `V`.
local function select_lines(bufnr, scenario)
  keys(string.format("%dGV%dG", scenario.line1, scenario.line2))
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "V" and vim.fn.line(".") == scenario.line2
  end, 5000, "a linewise visual selection", bufnr)
end

--- Run `start()`, then wait for `User TandemEditDone` (or for `failed()` to say why it cannot come);
--- returns the server's answer.
local function await_edit(bufnr, start, failed)
  local result
  vim.api.nvim_create_autocmd("User", {
    pattern = "TandemEditDone",
    once = true,
    callback = function(event)
      result = event.data
    end,
  })
  start()
  wait_until(function()
    return result ~= nil or (failed and failed())
  end, 30000, "the edit to finish (User TandemEditDone)", bufnr)
  if result == nil then
    error("the edit did not start: " .. tostring(failed()), 2)
  end
  return result
end

local function to_normal_mode(bufnr)
  keys("<Esc>")
  wait_until(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, 5000, "normal mode", bufnr)
end

-- `:'<,'>TandemEdit <instruction>` on a linewise selection, typed as a user types it.
function runners.edit_command(bufnr, scenario, out)
  set_edit_truth(scenario.edit_truth)
  select_lines(bufnr, scenario)
  out.result = await_edit(bufnr, function()
    -- `:` in visual mode gives `:'<,'>`.
    keys(":TandemEdit " .. scenario.instruction .. "<CR>")
  end)
  out.after_edit = buffer_text(bufnr)
  out.messages = vim.api.nvim_exec2("messages", { output = true }).output
  out.statusline = require("tandem").statusline()
  capture(bufnr, "edit-result")
end

--- `vim.lsp.buf.code_action()` on the selection with `vim.ui.select` answered by `choose(items)`, which
--- returns the item to pick, false (it runs the edit itself) or nil (the run stops with the titles offered).
local function code_action(bufnr, scenario, out, choose)
  set_edit_truth(scenario.edit_truth)
  select_lines(bufnr, scenario)
  local original_select = vim.ui.select
  local not_offered
  vim.ui.select = function(items, opts, on_choice)
    out.offered = vim.tbl_map(function(item)
      return item.action.title
    end, items)
    out.select_prompt = opts.prompt
    -- A real picker (the inputlist prompt, telescope, fzf-lua) takes the keyboard, and Visual mode ends
    -- with the choice. Left on, Neovim would hold the edit's "Workspace edit" message on screen for up to
    -- 3 s (waiting for a key) before it goes on.
    vim.cmd.normal({ args = { vim.keycode("<Esc>") }, bang = true })
    out.mode_at_choice = vim.api.nvim_get_mode().mode
    local item = choose(items)
    if item == nil then
      not_offered = "no code action to pick among " .. vim.inspect(out.offered)
    end
    on_choice(item or nil)
  end
  local ok, result = pcall(await_edit, bufnr, function()
    vim.lsp.buf.code_action()
  end, function()
    return not_offered
  end)
  vim.ui.select = original_select
  if not ok then
    error(result, 0)
  end
  out.result = result
  out.after_edit = buffer_text(bufnr)
  out.messages = vim.api.nvim_exec2("messages", { output = true }).output
  to_normal_mode(bufnr)
end

-- A preset code action ("tandem: Add type hints"): Neovim sends its `tandem.edit` command.
function runners.code_action_preset(bufnr, scenario, out)
  code_action(bufnr, scenario, out, function(items)
    for _, item in ipairs(items) do
      if item.action.title == scenario.action then
        return item
      end
    end
  end)
end

-- "Edit selection with tandem...": its client-side command `tandem.editSelection` asks for the instruction
-- with `vim.ui.input`, then edits the code action's range. When the server does not offer this action to
-- Neovim, the command is run the way Neovim runs a chosen code action's command (`client:exec_cmd` with
-- the code action request's context), from the context of one of tandem's actions.
function runners.code_action_prompt(bufnr, scenario, out)
  local original_input = vim.ui.input
  vim.ui.input = function(opts, on_confirm)
    out.input_prompt = opts.prompt
    on_confirm(scenario.instruction)
  end
  local ok, err = pcall(code_action, bufnr, scenario, out, function(items)
    local tandem_item
    for _, item in ipairs(items) do
      if item.action.title == scenario.action then
        out.prompt_action_offered = true
        return item
      end
      if item.action.title:find("^tandem: ") then
        tandem_item = tandem_item or item
      end
    end
    out.prompt_action_offered = false
    if tandem_item == nil then
      return nil
    end
    local client = assert(vim.lsp.get_client_by_id(tandem_item.ctx.client_id))
    local command = { title = scenario.action, command = "tandem.editSelection" }
    vim.schedule(function()
      client:exec_cmd(command, tandem_item.ctx)
    end)
    return false
  end)
  vim.ui.input = original_input
  if not ok then
    error(err, 0)
  end
end

-- Next edits: make the scenario's change in insert mode, see the predicted next change (the replaced text
-- highlighted, the new text as virtual text), accept it, then accept the one that follows it.
function runners.next_edit(bufnr, scenario, out)
  local next_edit = require("tandem.next_edit")
  local ns = vim.api.nvim_get_namespaces().tandem_next_edit
  vim.api.nvim_win_set_cursor(0, { scenario.row + 1, scenario.col })
  keys("a" .. scenario.type .. "<Esc>")
  out.shown = {}
  for round = 1, scenario.accepts do
    wait_until(function()
      return next_edit.shown(bufnr) ~= nil
    end, 15000, "next edit " .. round, bufnr)
    local marks = vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })
    local virtual, highlighted = {}, {}
    for _, mark in ipairs(marks) do
      local details = mark[4]
      for _, chunk in ipairs(details.virt_text or {}) do
        virtual[#virtual + 1] = chunk[1]
      end
      if details.hl_group and details.end_row then
        local text = vim.api.nvim_buf_get_text(bufnr, mark[2], mark[3], details.end_row, details.end_col, {})
        highlighted[#highlighted + 1] = table.concat(text, "\n")
      end
    end
    out.shown[round] = { virtual = virtual, highlighted = highlighted }
    press_and_wait_for_change(bufnr, cfg_key("accept"), "the next edit applied")
  end
  out.text = buffer_text(bufnr)
end

-- Next edits that replace text, the second one off screen: the window is cut to `height` lines, the
-- scenario's change is made with `s` (the character under the cursor replaced by `type`), the first
-- suggestion (on screen) is accepted, then the second, below the window, shows a hint at the cursor: the
-- accept key first jumps to it, then applies it.
function runners.next_edit_far(bufnr, scenario, out)
  local next_edit = require("tandem.next_edit")
  local ns = vim.api.nvim_get_namespaces().tandem_next_edit
  vim.cmd("split")
  vim.cmd("resize " .. scenario.height)
  vim.api.nvim_win_set_cursor(0, { scenario.row + 1, scenario.col })
  keys("s" .. scenario.type .. "<Esc>")
  out.shown = {}
  for round = 1, 2 do
    wait_until(function()
      return next_edit.shown(bufnr) ~= nil
    end, 15000, "next edit " .. round, bufnr)
    local marks = vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })
    local shown = { virtual = {}, highlighted = {}, hints = {}, below = {} }
    for _, mark in ipairs(marks) do
      local details = mark[4]
      for _, virt_line in ipairs(details.virt_lines or {}) do
        shown.below[#shown.below + 1] = virt_line[1][1]
      end
      for _, chunk in ipairs(details.virt_text or {}) do
        local into = details.virt_text_pos == "eol" and shown.hints or shown.virtual
        into[#into + 1] = chunk[1]
      end
      if details.hl_group and details.end_row then
        local text = vim.api.nvim_buf_get_text(bufnr, mark[2], mark[3], details.end_row, details.end_col, {})
        shown.highlighted[#shown.highlighted + 1] = table.concat(text, "\n")
      end
    end
    shown.window = { vim.fn.line("w0"), vim.fn.line("w$") }
    out.shown[round] = shown
    -- What the window shows, rebuilt from the extmarks: struck text between ~~, virtual lines after their
    -- line, inline virtual text in [+ ], the hint at the end of the cursor's line.
    if spec.artifacts then
      local screen = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
      local extra = {}
      table.sort(marks, function(a, b)
        return a[2] > b[2] or (a[2] == b[2] and a[3] > b[3])
      end)
      for _, mark in ipairs(marks) do
        local row, col, details = mark[2] + 1, mark[3], mark[4]
        if details.end_row == mark[2] and details.hl_group then
          local line = screen[row]
          screen[row] = line:sub(1, col) .. "~~" .. line:sub(col + 1, details.end_col) .. "~~" .. line:sub(details.end_col + 1)
        end
        for _, chunk in ipairs(details.virt_text or {}) do
          local line = screen[row]
          screen[row] = details.virt_text_pos == "eol" and (line .. " " .. chunk[1])
            or (line:sub(1, col) .. "[+" .. chunk[1] .. "]" .. line:sub(col + 1))
        end
        for _, virt_line in ipairs(details.virt_lines or {}) do
          extra[row] = (extra[row] or "") .. "\n  + " .. virt_line[1][1]
        end
      end
      for row, text in pairs(extra) do
        screen[row] = screen[row] .. text
      end
      vim.fn.mkdir(spec.artifacts, "p")
      vim.fn.writefile(vim.split(table.concat(screen, "\n"), "\n"), spec.artifacts .. "/neovim-next-edit-far-" .. round .. ".txt")
    end
    if #shown.hints > 0 then
      local row = vim.api.nvim_win_get_cursor(0)[1]
      keys(cfg_key("accept"))
      wait_until(function()
        return vim.api.nvim_win_get_cursor(0)[1] ~= row
      end, 5000, "the accept key to jump to the edit", bufnr)
      shown.jumped_to = vim.api.nvim_win_get_cursor(0)[1]
      shown.text_after_jump = buffer_text(bufnr)
    end
    press_and_wait_for_change(bufnr, cfg_key("accept"), "the next edit applied")
  end
  out.text = buffer_text(bufnr)
  vim.cmd("only")
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
