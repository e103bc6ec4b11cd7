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
(require 'eglot)

(defgroup tandem nil
  "AI completion from the tandem language server."
  :group 'tools
  :prefix "tandem-")

(defcustom tandem-command '("tandem" "serve")
  "How to start the tandem language server: a program and its arguments."
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

(defvar tandem--last-status nil
  "The last `tandem/status' notification from the server (a plist), if it sent one.")

(defun tandem-eglot-contact (&optional _interactive)
  "The eglot contact for tandem.
That is `tandem-command' plus `tandem-initialization-options'."
  (if tandem-initialization-options
      (append tandem-command (list :initializationOptions tandem-initialization-options))
    (copy-sequence tandem-command)))

;;;###autoload
(defun tandem-eglot-setup ()
  "Make eglot use tandem for `tandem-modes'.
The entry goes first in `eglot-server-programs', so it wins over
the modes' default servers."
  (setq eglot-server-programs
        (cons (cons tandem-modes #'tandem-eglot-contact)
              (cl-remove #'tandem-eglot-contact eglot-server-programs :key #'cdr-safe))))

(cl-defmethod eglot-handle-notification (_server (_method (eql tandem/status)) &rest params)
  "Keep PARAMS of the server's `tandem/status' for `tandem-status'.
They carry the last latency, route, cache hit and errors."
  (setq tandem--last-status params))

(defun tandem-status ()
  "Show what tandem last reported about itself."
  (interactive)
  (message "tandem: %s" (if tandem--last-status (prin1-to-string tandem--last-status) "no status yet")))

(defun tandem--server ()
  "The eglot server of this buffer, if it is tandem."
  (let ((server (eglot-current-server)))
    (unless server
      (user-error "No language server in this buffer: M-x eglot first"))
    server))

(defun tandem-edit (beg end instruction)
  "Ask tandem to edit the region BEG..END following INSTRUCTION (`tandem.edit').
The server computes the edit and applies it with workspace/applyEdit."
  (interactive
   (if (use-region-p)
       (list (region-beginning) (region-end) (read-string "tandem edit: "))
     (list (line-beginning-position) (line-end-position) (read-string "tandem edit: "))))
  (let* ((server (tandem--server))
         (provider (eglot--server-capable :executeCommandProvider))
         (commands (and (listp provider) (plist-get provider :commands))))
    (unless (seq-contains-p commands "tandem.edit")
      (user-error "This tandem server does not offer edits (tandem.edit) yet; upgrade tandem"))
    (eglot-execute-command
     server "tandem.edit"
     (vector (list :uri (eglot--path-to-uri (buffer-file-name))
                   :range (list :start (eglot--pos-to-lsp-position beg)
                                :end (eglot--pos-to-lsp-position end))
                   :instruction instruction)))))

(provide 'tandem)
;;; tandem.el ends here
