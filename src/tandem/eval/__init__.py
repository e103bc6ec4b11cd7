"""tandem.eval: tooling that measures the product: the replay client, git-history edit tasks, router and
edit evaluation, trace reports. It may use the product; the product never imports it."""
