"""Configuration: one typed tree merged from layers (`tree`), and what a workspace's own settings may change
when the user does not trust it (`trust`).
"""
