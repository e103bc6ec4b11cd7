"""The only door to the user's machine: reading workspace files and ignore files, running git, and deciding
where an edit may write. Nothing else in the product opens a file, lists a directory or starts a process.

`containment` says where a path really is (inside the workspace folders or not).
"""
