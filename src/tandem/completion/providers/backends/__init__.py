"""Model backends behind one narrow interface (`base.Backend`)."""
