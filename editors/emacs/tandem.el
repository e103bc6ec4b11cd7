;;; tandem.el --- tandem AI completion through eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: languages, tools, convenience

;;; Commentary:

;; tandem is a language server that streams AI completions from a fast model.  This file registers it
;; with eglot, so `completion-at-point' (and Company or Corfu on top of it) offers tandem's completion
;; as a menu item whose text edit inserts the whole, possibly multi-line, suggestion.
;;
;;   (require 'tandem)
;;   (setq tandem-initialization-options
;;         '(:models (:fast (:provider "openai-chat" :base_url "http://127.0.0.1:8123/v1"
;;                           :model "sim-spark"))))
;;   (tandem-eglot-setup)            ; then M-x eglot in a Python (or other listed) buffer
;;
;; eglot runs one server per buffer: in `tandem-modes' tandem replaces the language's own server.
;; See README.md for lsp-mode, which can run tandem beside another server and show ghost text.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'eglot)

(defgroup tandem nil
  "AI completion from the tandem language server."
  :group 'tools
  :prefix "tandem-")

(defcustom tandem-command '("tandem" "serve")
  "How to start the tandem language server: a program and its arguments.
The default runs the `tandem' on your own PATH.  Point this at a project's
virtualenv only for projects you trust: a cloned repository can ship its
own executable .venv/bin/tandem."
  :type '(repeat string))

(defcustom tandem-initialization-options nil
  "A plist sent as LSP initializationOptions: tandem's configuration tree.
For example:
  (:models (:fast (:provider \"openai-chat\"
                   :base_url \"http://127.0.0.1:8123/v1\"
                   :model \"sim-spark\")))"
  :type 'sexp)

(defcustom tandem-modes
  '(python-mode python-ts-mode rust-mode rust-ts-mode go-mode go-ts-mode js-mode js-ts-mode
    typescript-mode typescript-ts-mode c-mode c-ts-mode c++-mode c++-ts-mode java-mode java-ts-mode
    ruby-mode ruby-ts-mode sh-mode bash-ts-mode lua-mode emacs-lisp-mode)
  "Major modes whose buffers `tandem-eglot-setup' hands to tandem."
  :type '(repeat symbol))

(defcustom tandem-confirm-edits nil
  "Whether to ask before applying an edit that tandem sends.
tandem only sends the edits you ask for (`tandem-edit', its code
actions), so by default they are applied at once.  Set it to
`confirm' to be asked, as eglot asks for other servers' edits.
Edits of files that are not visited are always confirmed by eglot."
  :type '(choice (const :tag "Apply at once" nil)
                 (const :tag "Ask first" confirm)))

(defcustom tandem-edit-timeout-s 600
  "Seconds to wait for the server's answer to `tandem-edit'.
Edits routed to the accurate model can take a minute or more."
  :type 'number)

(defcustom tandem-mode-line t
  "Whether `tandem-eglot-setup' shows tandem's status in the mode line.
It shows the last completion's latency and route (\"tandem 42ms fast\")
in buffers that tandem serves."
  :type 'boolean)

(defvar tandem-edit-functions nil
  "Abnormal hook run when an edit ends, with the server's answer as a plist.
The plist has :applied (t or :json-false), :message, and when the
server got that far :tier, :route and :files.")

(defconst tandem--mode-line-entry '(:eval (tandem--mode-line))
  "What `tandem-eglot-setup' adds to `mode-line-misc-info'.")

(defvar tandem--last-status nil
  "The last `tandem/status' notification from the server (a plist), if it sent one.")

(defun tandem-eglot-contact (&optional _interactive)
  "The eglot contact for tandem.
That is `tandem-command' plus `tandem-initialization-options'.  A
program that cannot be found is said in words here: left to eglot, it
became a prompt (or, where none can be formed, an error quoting this
whole contact)."
  (unless (executable-find (car tandem-command))
    (user-error "tandem: cannot run `%s': not found on `exec-path'; install tandem (pip install <tandem checkout>) or set `tandem-command'"
                (car tandem-command)))
  (if tandem-initialization-options
      (append tandem-command (list :initializationOptions tandem-initialization-options))
    (copy-sequence tandem-command)))

(defun tandem--modes-by-language (modes)
  "MODES grouped by language: `python-mode' with `python-ts-mode', `sh-mode' with `bash-ts-mode'."
  (let ((groups '()))
    (dolist (mode modes)
      (let* ((name (symbol-name mode))
             (key (if (equal name "bash-ts-mode")
                      "sh-mode"
                    (replace-regexp-in-string "-ts-mode\\'" "-mode" name)))
             (group (assoc key groups)))
        (if group
            (setcdr group (append (cdr group) (list mode)))
          (push (list key mode) groups))))
    (mapcar (lambda (group) (let ((members (cdr group))) (if (cdr members) members (car members))))
            (nreverse groups))))

;;;###autoload
(defun tandem-eglot-setup ()
  "Make eglot use tandem for `tandem-modes'.
The entry goes first in `eglot-server-programs', so it wins over
the modes' default servers.  With `tandem-mode-line', tandem's
status joins the mode line."
  ;; One entry per language (its mode and tree-sitter mode): eglot's "Connected!" line names the
  ;; entry's modes, and one entry for all of `tandem-modes' listed twenty of them over three lines.
  (setq eglot-server-programs
        (append (mapcar (lambda (modes) (cons modes #'tandem-eglot-contact))
                        (tandem--modes-by-language tandem-modes))
                (cl-remove #'tandem-eglot-contact eglot-server-programs :key #'cdr-safe)))
  (when tandem-mode-line
    (add-to-list 'mode-line-misc-info tandem--mode-line-entry t)))

;;; Status

(cl-defmethod eglot-handle-notification (_server (_method (eql tandem/status)) &rest params)
  "Keep PARAMS of the server's `tandem/status' for the mode line and `tandem-status'.
The server composes their :text (short) and :tooltip (a sentence); the
other fields are the same facts as data."
  (setq tandem--last-status params)
  (force-mode-line-update t))

(defun tandem-status-string ()
  "A short text for the mode line: the server's own, from its last `tandem/status'.
For example \"tandem 42 ms fast\", \"tandem 3 ms cached\" or
\"tandem ⚠ rate limited by the provider\"; empty until the server has
sent one."
  (let ((text (plist-get tandem--last-status :text)))
    (if (stringp text) text "")))

(defun tandem--mode-line ()
  "The mode line text in a buffer that tandem serves, else nothing."
  (let ((server (and (bound-and-true-p eglot--managed-mode) (eglot-current-server))))
    (if (and server (tandem--server-p server))
        (concat " " (tandem-status-string) " ")
      "")))

(defun tandem-status ()
  "Show what tandem last reported about itself."
  (interactive)
  (let ((tooltip (plist-get tandem--last-status :tooltip)))
    (message "%s" (if (stringp tooltip)
                      (format "%s: %s" (tandem-status-string) tooltip)
                    "tandem: no status yet (no completion asked)"))))

;;; Edits

(defun tandem--server ()
  "The eglot server of this buffer, if it is tandem."
  (let ((server (eglot-current-server)))
    (unless server
      (user-error "No language server in this buffer: M-x eglot first"))
    server))

(defun tandem--server-p (server)
  "Whether SERVER is tandem (the name it gave when it started)."
  (equal (plist-get (eglot--server-info server) :name) "tandem"))

(defun tandem--quietly (function &rest args)
  "Call FUNCTION with ARGS without eglot's lines about applying edits.
eglot echoes \"[eglot] applying 1 edits to `file'...done\" (a progress
reporter) for every edit it applies and \"[eglot] Edit successful!\" after
a workspace edit: one per accepted next edit, and two beside tandem's own
message, which already says what changed.  Its questions and warnings stay."
  (let ((eglot-message (symbol-function 'eglot--message)))
    ;; The reporter is made as usual; what it would echo is dropped (`progress-reporter-update' is
    ;; inlined where it is called, so the function it calls is the one replaced).
    (cl-letf (((symbol-function 'progress-reporter-do-update) #'ignore)
              ((symbol-function 'progress-reporter-done) #'ignore)
              ((symbol-function 'eglot--message)
               (lambda (format &rest format-args)
                 (unless (equal format "Edit successful!")
                   (apply eglot-message format format-args)))))
      (apply function args))))

(cl-defmethod eglot-handle-request :around
  (server (_method (eql workspace/applyEdit)) &rest _)
  "Apply SERVER's edit as `tandem-confirm-edits' says if it is tandem.
Other servers' edits are applied as eglot does."
  (if (tandem--server-p server)
      (let ((eglot-confirm-server-initiated-edits tandem-confirm-edits))
        (tandem--quietly #'cl-call-next-method))
    (cl-call-next-method)))

(cl-defmethod eglot-handle-notification :around
  (server (_method (eql window/showMessage)) &key type message &allow-other-keys)
  "Show tandem's window/showMessage in its own words in the echo area.
eglot writes \"[eglot] Server reports (type=3): ...\" for every server;
tandem's messages already say \"tandem: ...\".  Errors keep the error face."
  (if (and (tandem--server-p server) (stringp message))
      (message "%s" (if (and (numberp type) (<= type 1)) (propertize message 'face 'error) message))
    (cl-call-next-method)))

(defun tandem--edit-finished (result)
  "Report RESULT, the server's answer to `tandem.edit'.
The server has already said how the edit ended (`window/showMessage',
which eglot shows): the model, the files and the size of the change,
or why nothing was applied.  Then run `tandem-edit-functions' with it."
  (let ((message (plist-get result :message)))
    (unless (and (stringp message) (not (string-empty-p message)))
      (message (if (eq (plist-get result :applied) t)
                   "tandem: edit applied"
                 "tandem: the edit was not applied"))))
  (run-hook-with-args 'tandem-edit-functions result))

(defun tandem-edit (beg end instruction)
  "Ask tandem to edit the region BEG..END following INSTRUCTION (`tandem.edit').
Without a region, the current line.  The server computes the edit,
choosing the fast or the accurate model, and applies it with
workspace/applyEdit; Emacs stays usable meanwhile."
  (interactive
   (if (use-region-p)
       (list (region-beginning) (region-end) (read-string "tandem edit: "))
     (list (line-beginning-position) (line-end-position) (read-string "tandem edit: "))))
  (when (string-empty-p (string-trim instruction))
    (user-error "tandem edit: say what should change"))
  (let* ((server (tandem--server))
         (provider (eglot--server-capable :executeCommandProvider))
         (commands (and (listp provider) (plist-get provider :commands))))
    (unless (seq-contains-p commands "tandem.edit")
      (user-error "This tandem server does not offer edits (tandem.edit) yet; upgrade tandem"))
    (tandem--send-edit
     server
     (vector (list :uri (eglot--path-to-uri (buffer-file-name))
                   :range (list :start (eglot--pos-to-lsp-position beg)
                                :end (eglot--pos-to-lsp-position end))
                   :instruction (string-trim instruction))))))

(defun tandem--send-edit (server arguments)
  "Send `tandem.edit' with ARGUMENTS (a vector) to SERVER.
The answer is reported when it comes (`tandem--edit-finished')."
  ;; The server must see the text the range refers to: send pending changes first.
  (eglot--signal-textDocument/didChange)
  (jsonrpc-async-request
   server :workspace/executeCommand
   `(:command "tandem.edit" :arguments ,arguments)
   :success-fn #'tandem--edit-finished
   :error-fn (lambda (err)
               (tandem--edit-finished
                (list :applied :json-false
                      :message (format "tandem edit: %s" (plist-get err :message)))))
   :timeout-fn (lambda ()
                 (tandem--edit-finished
                  (list :applied :json-false
                        :message (format "tandem edit: no answer in %ss" tandem-edit-timeout-s))))
   :timeout tandem-edit-timeout-s)
  (message "tandem: editing..."))

(cl-defmethod eglot-execute-command (server (_command (eql tandem.edit)) arguments)
  "Run tandem's code actions (preset edits) on SERVER like `tandem-edit'.
eglot would wait for the answer, blocking Emacs and giving up after
`jsonrpc-default-request-timeout'; an edit can take a minute.
ARGUMENTS are the code action's."
  (if (tandem--server-p server)
      (tandem--send-edit server arguments)
    (cl-call-next-method)))

(provide 'tandem)
(require 'tandem-next-edit)
;;; tandem.el ends here
