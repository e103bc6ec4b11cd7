;;; tandem-next-edit.el --- next-edit suggestions from tandem through eglot  -*- lexical-binding: t; -*-

;;; Commentary:

;; After you change a buffer, tandem predicts your next change nearby (`textDocument/copilotInlineEdit').
;; `tandem-next-edit-mode' asks for it after each change (once typing pauses) and shows it with overlays:
;; text inserted within a line where it goes; text replaced struck through, with the lines as they will
;; read below it; an edit off screen is pointed to by a hint at point's line.  `tandem-next-edit-accept'
;; goes to an edit off screen first, then applies it
;; (only to the buffer version it was computed for: if the buffer changed since, it is dropped, never
;; applied over newer text) and the next one is asked for at once; `tandem-next-edit-dismiss' hides it.
;;
;;   (add-hook 'eglot-managed-mode-hook #'tandem-next-edit-mode)
;;   (define-key tandem-next-edit-mode-map (kbd "M-l") #'tandem-next-edit-accept)   ; the defaults
;;   (define-key tandem-next-edit-mode-map (kbd "M-h") #'tandem-next-edit-dismiss)

;;; Code:

(require 'eglot)
(require 'jsonrpc)
(declare-function tandem--quietly "tandem" (function &rest args))

(defgroup tandem-next-edit nil
  "Next-edit suggestions from tandem."
  :group 'tandem)

(defcustom tandem-next-edit-delay-s 0.1
  "Seconds without a change before the next edit is asked for."
  :type 'number)

(defface tandem-next-edit-deleted '((t :strike-through t :inherit diff-removed))
  "The text a next edit would replace.")

(defface tandem-next-edit-inserted '((t :inherit diff-added))
  "The text a next edit would insert.")

(defvar-local tandem-next-edit--shown nil
  "The edit shown: its item plist (:text :textDocument :range :command).")

(defvar-local tandem-next-edit--overlays nil)
(defvar-local tandem-next-edit--jumped nil
  "Non-nil once `tandem-next-edit-accept' has moved point to the shown edit, which was off screen.")
(defvar-local tandem-next-edit--timer nil)

(defun tandem-next-edit-clear ()
  "Hide the shown edit (nothing is sent)."
  (mapc #'delete-overlay tandem-next-edit--overlays)
  (setq tandem-next-edit--overlays nil
        tandem-next-edit--shown nil
        tandem-next-edit--jumped nil))

(defun tandem-next-edit--on-screen-p (pos)
  "Whether POS is on a line the selected window shows (counted in lines from its start)."
  (let ((start (window-start))
        (bol (save-excursion (goto-char pos) (line-beginning-position))))
    (and (>= bol start) (< (count-lines start bol) (window-body-height)))))

(defun tandem-next-edit--show (edit &optional jumped)
  "Show EDIT with overlays; JUMPED: point was moved to it (no hint)."
  (tandem-next-edit-clear)
  (let* ((region (eglot--range-region (plist-get edit :range)))
         (beg (car region))
         (end (cdr region))
         (text (plist-get edit :text)))
    (when (< beg end)
      (let ((deleted (make-overlay beg end nil t nil)))
        (overlay-put deleted 'face 'tandem-next-edit-deleted)
        (overlay-put deleted 'tandem-next-edit t)
        (push deleted tandem-next-edit--overlays)))
    (if (and (= beg end) (not (string-match-p "\n" text)))
        ;; Text inserted within a line reads right where it goes.
        (let ((inserted (make-overlay end end nil t nil)))
          (overlay-put inserted 'after-string (propertize text 'face 'tandem-next-edit-inserted))
          (overlay-put inserted 'tandem-next-edit t)
          (push inserted tandem-next-edit--overlays))
      ;; A replacement (or new lines): below the struck range, the lines as they will read, on lines of
      ;; their own.  Drawn after the range, old and new text ran together ("a wsize by h").
      (let* ((line-end (save-excursion (goto-char end) (line-end-position)))
             (after (concat (buffer-substring-no-properties (save-excursion (goto-char beg) (line-beginning-position)) beg)
                            text
                            (buffer-substring-no-properties end line-end)))
             (below (make-overlay line-end line-end nil t nil)))
        (overlay-put below 'after-string
                     (concat "\n" (propertize after 'face 'tandem-next-edit-inserted)))
        (overlay-put below 'tandem-next-edit t)
        (push below tandem-next-edit--overlays)))
    ;; An edit off screen: a hint at the end of point's line says where, and which key goes there.
    (unless (or jumped (tandem-next-edit--on-screen-p beg))
      (let ((hint (make-overlay (line-end-position) (line-end-position) nil t nil)))
        (overlay-put hint 'after-string
                     (propertize (format "  ⇥ next edit at line %d (%s)" (line-number-at-pos beg)
                                         (substitute-command-keys "\\[tandem-next-edit-accept]"))
                                 'face 'shadow))
        (overlay-put hint 'tandem-next-edit-hint t)
        (push hint tandem-next-edit--overlays)))
    (setq tandem-next-edit--jumped jumped)
    (setq tandem-next-edit--shown edit)))

(defun tandem-next-edit ()
  "Ask tandem for the next edit at point and show it."
  (interactive)
  (let ((server (eglot-current-server))
        (buffer (current-buffer)))
    (when server
      ;; The server must have the text the request's version names.
      (eglot--signal-textDocument/didChange)
      (let ((version eglot--versioned-identifier))
        (jsonrpc-async-request
         server :textDocument/copilotInlineEdit
         (list :textDocument (list :uri (eglot--path-to-uri (buffer-file-name)) :version version)
               :position (eglot--pos-to-lsp-position))
         :success-fn
         (lambda (result)
           (when (buffer-live-p buffer)
             (with-current-buffer buffer
               (let ((edit (car (append (plist-get result :edits) nil))))
                 ;; An answer for a version the buffer has left is never shown.
                 (when (and edit
                            (equal version eglot--versioned-identifier)
                            (equal (plist-get (plist-get edit :textDocument) :version) version))
                   (tandem-next-edit--show edit)
                   (jsonrpc-notify server :textDocument/didShowInlineEdit (list :item edit)))))))
         :error-fn #'ignore
         :timeout-fn #'ignore)))))

(defun tandem-next-edit-accept ()
  "Apply the shown next edit if the buffer is still at its version.
Then ask for the next one."
  (interactive)
  (let ((edit tandem-next-edit--shown)
        (server (eglot-current-server))
        (jumped tandem-next-edit--jumped))
    (tandem-next-edit-clear)
    (cond
     ((not edit) (user-error "No next edit is shown"))
     ((and (not jumped)
           (equal (plist-get (plist-get edit :textDocument) :version) eglot--versioned-identifier)
           (not (tandem-next-edit--on-screen-p
                 (eglot--lsp-position-to-point (plist-get (plist-get edit :range) :start)))))
      ;; Off screen: the first press goes there; the next one applies it.
      (goto-char (eglot--lsp-position-to-point (plist-get (plist-get edit :range) :start)))
      (tandem-next-edit--show edit t))
     ((not (equal (plist-get (plist-get edit :textDocument) :version) eglot--versioned-identifier))
      (message "tandem: the buffer changed since that edit was suggested; dropped"))
     (t
      (tandem--quietly
       #'eglot--apply-text-edits
       (vector (list :range (plist-get edit :range) :newText (plist-get edit :text)))
       (plist-get (plist-get edit :textDocument) :version))
      (tandem-next-edit--goto-end edit)
      ;; Asked for below at once, not after the pause that a change of the user's waits for.
      (when (timerp tandem-next-edit--timer)
        (cancel-timer tandem-next-edit--timer)
        (setq tandem-next-edit--timer nil))
      (eglot--signal-textDocument/didChange)
      (let ((command (plist-get edit :command)))
        (when (and server command)
          (jsonrpc-async-request server :workspace/executeCommand
                                 (list :command (plist-get command :command)
                                       :arguments (plist-get command :arguments))
                                 :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore)))
      (tandem-next-edit)))))

(defun tandem-next-edit--goto-end (edit)
  "Put point after the text EDIT inserted."
  (goto-char (eglot--lsp-position-to-point (plist-get (plist-get edit :range) :start)))
  (forward-char (length (plist-get edit :text))))

(defun tandem-next-edit-dismiss ()
  "Hide the shown next edit and tell tandem it was turned down."
  (interactive)
  (let ((edit tandem-next-edit--shown)
        (server (eglot-current-server)))
    (tandem-next-edit-clear)
    (when (and edit server (plist-get edit :command))
      (jsonrpc-async-request server :workspace/executeCommand
                             (list :command "tandem.nextEditDismissed"
                                   :arguments (plist-get (plist-get edit :command) :arguments))
                             :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore))))

(defun tandem-next-edit--after-change (&rest _)
  "A change: what is shown no longer applies; ask again once changes pause."
  (when tandem-next-edit--shown
    (tandem-next-edit-clear))
  (when (timerp tandem-next-edit--timer)
    (cancel-timer tandem-next-edit--timer))
  (let ((buffer (current-buffer)))
    (setq tandem-next-edit--timer
          (run-with-timer tandem-next-edit-delay-s nil
                          (lambda ()
                            (when (buffer-live-p buffer)
                              (with-current-buffer buffer
                                (setq tandem-next-edit--timer nil)
                                (tandem-next-edit))))))))

(defvar tandem-next-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "M-l") #'tandem-next-edit-accept)
    (define-key map (kbd "M-h") #'tandem-next-edit-dismiss)
    map)
  "Keys of `tandem-next-edit-mode'.")

;;;###autoload
(define-minor-mode tandem-next-edit-mode
  "Ask tandem for the next edit after each change, and show it with overlays."
  :lighter nil
  :keymap tandem-next-edit-mode-map
  (if tandem-next-edit-mode
      (add-hook 'after-change-functions #'tandem-next-edit--after-change nil t)
    (remove-hook 'after-change-functions #'tandem-next-edit--after-change t)
    (tandem-next-edit-clear)))

(provide 'tandem-next-edit)
;;; tandem-next-edit.el ends here
