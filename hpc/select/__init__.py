"""Per-cluster member selection: features of a cluster, records of members run on clusters with known truth, and the selector trained on them."""
