"""Configuration: one typed tree merged from layers (`tree`), the range each number in it may take
(`ranges`), and what a workspace's own settings may change when the user does not trust it (`trust`).
"""
