;;; run-completion.el --- drive tandem through eglot in batch Emacs  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by tests/editors/test_editor_emacs.py:
;;
;;   TANDEM_TEST_SPEC=spec.json emacs -Q --batch -l editors/emacs/tests/run-completion.el
;;
;; spec.json: {result_path, plugin_dir, command: [...], init_options: {...}, scenarios: [...]}.
;; A completion scenario {name, path, type} visits its file, types `type' at the end, starts eglot with
;; tandem.el's set-up, asks eglot's completion-at-point function for candidates, then runs the real
;; `completion-at-point' command (which inserts the sole candidate and lets eglot apply its text edit),
;; and records the server's `tandem/status' and the mode line that shows it.
;; An edit scenario {name, kind: "edit", path, line1, line2, edit_truth, instruction or action} gives the
;; simulators (spec's sim_roots) its edit truth, visits its file and runs `tandem-edit' on lines
;; line1..line2 with the instruction, or picks the code action titled `action' in `eglot-code-actions';
;; the server applies its edit through eglot (workspace/applyEdit).  With `unopened' (a file not
;; visited that only the truth changes) it also records eglot's y-or-n-p prompt (answered yes), the
;; *Messages* lines the edit left, and the buffer eglot then visits that file in.
;; The result file holds what happened per scenario, or `error' with eglot's event log.

;;; Code:

(require 'json)
(require 'url)
(require 'package)

;; -Q skips site-start, where Debian activates its elpa-* packages.
(unless (require 'eglot nil t)
  (add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
  (package-initialize)
  (require 'eglot))

(defvar tandem-test--spec
  (let ((json-object-type 'plist) (json-array-type 'list) (json-key-type 'keyword))
    (json-read-file (getenv "TANDEM_TEST_SPEC"))))

(add-to-list 'load-path (plist-get tandem-test--spec :plugin_dir))
(require 'tandem)

(defun tandem-test--wait (pred timeout-s what)
  "Process events until PRED returns non-nil; signal an error naming WHAT after TIMEOUT-S."
  (let ((deadline (+ (float-time) timeout-s)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or (funcall pred) (error "Timed out after %ss waiting for %s" timeout-s what))))

(defun tandem-test--events ()
  "The tail of eglot's event log for the current server, for failure messages."
  (let ((server (ignore-errors (eglot-current-server))))
    (if (not server)
        "(no eglot server)"
      (with-current-buffer (jsonrpc-events-buffer server)
        (buffer-substring-no-properties (max (point-min) (- (point-max) 4000)) (point-max))))))

(defun tandem-test--scenario (scenario)
  "Run SCENARIO in its own buffer; return a plist of what was observed."
  (find-file (plist-get scenario :path))
  (goto-char (point-max))
  (if (plist-get scenario :electric_pair)
      ;; Typed as a key is (so `electric-pair-mode' closes the bracket after point).
      (progn
        (electric-pair-local-mode 1)
        (dolist (char (string-to-list (plist-get scenario :type)))
          (let ((last-command-event char))
            (self-insert-command 1))))
    (insert (plist-get scenario :type)))
  (unless (eglot-current-server)
    (apply #'eglot (eglot--guess-contact)))
  (tandem-test--wait #'eglot-managed-p 120 "eglot to manage the buffer")
  (let* ((server (eglot-current-server))
         (capf-installed (and (memq #'eglot-completion-at-point completion-at-point-functions) t))
         (capf (eglot-completion-at-point))
         (start (nth 0 capf))
         (end (nth 1 capf))
         (table (nth 2 capf))
         (candidates (all-completions (buffer-substring-no-properties start end) table))
         (items (mapcar (lambda (c) (get-text-property 0 'eglot--lsp-item c)) candidates))
         (tandem-items (cl-remove-if-not (lambda (i) (equal (plist-get i :detail) "tandem")) items))
         (before (buffer-substring-no-properties (point-min) (point-max)))
         (line-typed (buffer-substring-no-properties (line-beginning-position) (line-end-position))))
    (tandem-test--capture (concat (plist-get scenario :name) "-first-completion")
                          (concat "[completion candidates] " (mapconcat #'identity candidates " | ")))
    ;; The command a user runs (C-M-i): the sole candidate is inserted and eglot applies its textEdit.
    (completion-at-point)
    ;; The server's `tandem/status' follows its answer.
    (tandem-test--wait (lambda () tandem--last-status) 10 "the server's tandem/status")
    (tandem-test--capture (concat (plist-get scenario :name) "-accepted")
                          (concat "[M-x tandem-status] " (tandem-status)))
    (list :name (plist-get scenario :name)
          :status tandem--last-status
          ;; What the mode line entry shows (batch Emacs draws no mode line: `format-mode-line' is empty).
          :mode_line (tandem--mode-line)
          ;; What M-x tandem-status says (`message' returns it).
          :status_message (tandem-status)
          :mode_line_installed (if (member tandem--mode-line-entry mode-line-misc-info) t :json-false)
          :server (plist-get (eglot--server-info server) :name)
          :capf_installed (if capf-installed t :json-false)
          :typed_word (buffer-substring-no-properties start end)
          :candidates candidates
          :new_texts (mapcar (lambda (i) (plist-get (plist-get i :textEdit) :newText)) tandem-items)
          :before before
          :line_typed line-typed
          :after (buffer-substring-no-properties (point-min) (point-max))
          ;; Last: it types on in the buffer.
          :next_line (and (plist-get scenario :next_line) (tandem-test--next-line scenario))
          :done t)))

(defun tandem-test--next-line (scenario)
  "At the end of the line just completed, with no RET: what `completion-at-point' offers there, and
the buffer after the real command inserts it."
  (end-of-line)
  (let* ((capf (eglot-completion-at-point))
         (start (nth 0 capf))
         (end (nth 1 capf))
         (table (nth 2 capf))
         (candidates (all-completions (buffer-substring-no-properties start end) table))
         (items (mapcar (lambda (c) (get-text-property 0 'eglot--lsp-item c)) candidates))
         (tandem-items (cl-remove-if-not (lambda (i) (equal (plist-get i :detail) "tandem")) items)))
    (tandem-test--capture (concat (plist-get scenario :name) "-next-line")
                          (concat "[completion candidates] " (mapconcat #'identity candidates " | ")))
    (completion-at-point)
    (tandem-test--capture (concat (plist-get scenario :name) "-next-line-accepted"))
    (list :candidates candidates
          :new_texts (mapcar (lambda (i) (plist-get (plist-get i :textEdit) :newText)) tandem-items)
          :after (buffer-substring-no-properties (point-min) (point-max)))))

(defun tandem-test--set-edit-truth (files)
  "Give every simulator of the spec the edit truth FILES (a plist: path, text after the edit)."
  (dolist (root (plist-get tandem-test--spec :sim_roots))
    (let* ((url-request-method "POST")
           (url-request-extra-headers '(("Content-Type" . "application/json")))
           (url-request-data (encode-coding-string (json-encode (list :files files :errors "off")) 'utf-8))
           (buffer (url-retrieve-synchronously (concat root "/_sim/edit-truth") t t 30)))
      (unless buffer
        (error "The simulator at %s did not answer" root))
      (with-current-buffer buffer
        (goto-char (point-min))
        (unless (looking-at "HTTP/1\\.[01] 200")
          (error "The simulator refused the edit truth: %s" (buffer-string))))
      (kill-buffer buffer))))

(defun tandem-test--capture (name &rest extra)
  "Write a text capture NAME.txt of the lines around point, the mode line entry and EXTRA lines.
It goes to the spec's :artifacts directory (batch Emacs draws no frame, so the capture is rebuilt
from the buffer and what tandem.el shows)."
  (let ((dir (plist-get tandem-test--spec :artifacts)))
    (when dir
      (make-directory dir t)
      (let ((around (buffer-substring-no-properties
                     (save-excursion (forward-line -8) (line-beginning-position))
                     (save-excursion (forward-line 2) (line-end-position))))
            (mode-line (tandem--mode-line)))
        (with-temp-file (expand-file-name (concat "emacs-" name ".txt") dir)
          (insert around "\n\n[mode line]" mode-line "\n")
          (dolist (line extra) (insert line "\n")))))))

(defun tandem-test--edit-scenario (scenario)
  "Run the edit SCENARIO on its lines; return a plist of what was observed."
  (tandem-test--set-edit-truth (plist-get scenario :edit_truth))
  (find-file (plist-get scenario :path))
  (unless (eglot-current-server)
    (apply #'eglot (eglot--guess-contact)))
  (tandem-test--wait #'eglot-managed-p 120 "eglot to manage the buffer")
  (let* ((result nil)
         (offered nil)
         (prompts nil)
         (tandem-edit-functions (list (lambda (answer) (setq result answer))))
         (beg (progn (goto-char (point-min)) (forward-line (1- (plist-get scenario :line1))) (point)))
         (end (progn (goto-char (point-min)) (forward-line (plist-get scenario :line2)) (point)))
         (action (plist-get scenario :action))
         (unopened (plist-get scenario :unopened))
         (messages-from (with-current-buffer (messages-buffer) (point-max))))
    ;; eglot asks before it edits a file that is not visited (y-or-n-p): the prompt is recorded and
    ;; answered yes, as the user who asked for the edit would.
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (prompt) (push prompt prompts) t)))
      (if (not action)
          (tandem-edit beg end (plist-get scenario :instruction))
        ;; M-x eglot-code-actions as a user runs it: the menu is a `completing-read' (a keyboard event
        ;; last, not a mouse click, so not a popup menu), answered with the action's title.
        (let ((last-nonmenu-event ?a)
              (completing-read-function
               (lambda (_prompt collection &rest _)
                 (setq offered (all-completions "" collection))
                 action)))
          (eglot-code-actions beg end nil t)))
      (tandem-test--wait (lambda () result) 60 "the edit to finish (tandem-edit-functions)"))
    (let* ((messages (with-current-buffer (messages-buffer)
                       (buffer-substring-no-properties messages-from (point-max))))
           (visiting (and unopened (find-buffer-visiting unopened))))
      (tandem-test--capture (concat (plist-get scenario :name) "-result")
                            (concat "[message] " (or (plist-get result :message) ""))
                            (concat "[y-or-n-p] " (mapconcat #'identity (reverse prompts) " | "))
                            (concat "[*Messages*]\n" messages))
      (list :name (plist-get scenario :name)
            :result result
            :offered offered
            :prompts (vconcat (reverse prompts))
            :messages messages
            ;; The file that was not visited: whether eglot visits it now, and that buffer.
            :unopened (and unopened
                           (list :visited (if visiting t :json-false)
                                 :text (and visiting (with-current-buffer visiting
                                                       (buffer-substring-no-properties (point-min) (point-max))))
                                 :modified (if (and visiting (buffer-modified-p visiting)) t :json-false)
                                 :on_disk (with-temp-buffer
                                            (insert-file-contents unopened)
                                            (buffer-substring-no-properties (point-min) (point-max)))))
            :after (buffer-substring-no-properties (point-min) (point-max))
            :modified (if (buffer-modified-p) t :json-false)
            :done t))))

(defun tandem-test--capture-next-edit (name)
  "Write emacs-NAME.txt: the buffer as the next edit's overlays draw it (struck text between ~~)."
  (let ((dir (plist-get tandem-test--spec :artifacts))
        (text (buffer-substring-no-properties (point-min) (point-max))))
    (when dir
      (make-directory dir t)
      ;; From the last overlay to the first, so that each insertion leaves the earlier positions alone.
      (dolist (o (sort (copy-sequence tandem-next-edit--overlays)
                       (lambda (a b) (> (overlay-start a) (overlay-start b)))))
        (let ((beg (1- (overlay-start o))) (end (1- (overlay-end o))))
          (if (overlay-get o 'after-string)
              (setq text (concat (substring text 0 end)
                                 (substring-no-properties (overlay-get o 'after-string))
                                 (substring text end)))
            (setq text (concat (substring text 0 beg) "~~" (substring text beg end) "~~" (substring text end))))))
      (with-temp-file (expand-file-name (concat "emacs-" name ".txt") dir)
        (insert text)))))

(defun tandem-test--next-edit-scenario (scenario)
  "Run the next-edit SCENARIO: make its change with `tandem-next-edit-mode' on, then accept the
suggestions one after another; return a plist of what was shown and the text at the end."
  (find-file (plist-get scenario :path))
  (unless (eglot-current-server)
    (apply #'eglot (eglot--guess-contact)))
  (tandem-test--wait #'eglot-managed-p 120 "eglot to manage the buffer")
  (tandem-next-edit-mode 1)
  (goto-char (point-min))
  (forward-line (plist-get scenario :line))
  (forward-char (plist-get scenario :column))
  ;; A replacement: the characters under point are deleted before the new text is typed.
  (delete-char (or (plist-get scenario :delete) 0))
  (insert (plist-get scenario :type))
  (let ((shown '()))
    (dotimes (round (plist-get scenario :accepts))
      (tandem-test--wait (lambda () tandem-next-edit--shown) 30 (format "next edit %d" (1+ round)))
      (push (list :inserted (delq nil (mapcar (lambda (o)
                                                 (let ((text (overlay-get o 'after-string)))
                                                   (and text (not (overlay-get o 'tandem-next-edit-hint))
                                                        (substring-no-properties text))))
                                               tandem-next-edit--overlays))
                  :hints (delq nil (mapcar (lambda (o)
                                             (and (overlay-get o 'tandem-next-edit-hint)
                                                  (substring-no-properties (overlay-get o 'after-string))))
                                           tandem-next-edit--overlays))
                  ;; A hint: the first press goes to the edit (the line point is on after it).
                  :jumped_to (when (cl-some (lambda (o) (overlay-get o 'tandem-next-edit-hint))
                                            tandem-next-edit--overlays)
                               (tandem-next-edit-accept)
                               (line-number-at-pos))
                  :struck (delq nil (mapcar (lambda (o)
                                              (and (overlay-get o 'face)
                                                   (buffer-substring-no-properties (overlay-start o) (overlay-end o))))
                                            tandem-next-edit--overlays)))
            shown)
      (tandem-test--capture-next-edit (format "%s-%d" (plist-get scenario :name) (1+ round)))
      (tandem-next-edit-accept))
    (list :name (plist-get scenario :name)
          :shown (vconcat (nreverse shown))
          :after (buffer-substring-no-properties (point-min) (point-max))
          :done t)))

(defun tandem-test--missing-scenario (scenario)
  "Visit SCENARIO's file with `tandem-command' naming a program that is not installed, and start eglot
as `M-x eglot' does; return what the user is told."
  (let ((tandem-command '("tandem-not-installed" "serve")))
    (find-file (plist-get scenario :path))
    (list :name (plist-get scenario :name)
          :message (condition-case err
                       (progn (apply #'eglot (eglot--guess-contact t)) "(no error)")
                     (error (error-message-string err)))
          :done t)))

(let ((results '()) (failure nil))
  (setq tandem-command (plist-get tandem-test--spec :command)
        tandem-initialization-options (plist-get tandem-test--spec :init_options)
        ;; Server start-up on a busy machine can take a while; the default is 30 s.
        eglot-connect-timeout 120
        eglot-sync-connect t
        ;; Don't wait for idle time to send didChange: the request goes at once in batch.
        eglot-send-changes-idle-time 0)
  (tandem-eglot-setup)
  (condition-case err
      (dolist (scenario (plist-get tandem-test--spec :scenarios))
        (push (pcase (plist-get scenario :kind)
                ("edit" (tandem-test--edit-scenario scenario))
                ("next_edit" (tandem-test--next-edit-scenario scenario))
                ("missing" (tandem-test--missing-scenario scenario))
                (_ (tandem-test--scenario scenario)))
              results))
    (error (setq failure (format "%s\neglot events:\n%s" (error-message-string err) (tandem-test--events)))))
  (with-temp-file (plist-get tandem-test--spec :result_path)
    (insert (json-encode (list :scenarios (vconcat (nreverse results)) :error failure
                               :messages (with-current-buffer (messages-buffer)
                                           (buffer-substring-no-properties (point-min) (point-max)))))))
  (ignore-errors (eglot-shutdown-all))
  (kill-emacs 0))

;;; run-completion.el ends here
