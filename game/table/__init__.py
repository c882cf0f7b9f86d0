"""One table over many hands: the decision core, its inputs, its people, chips, payouts, status,
screens and snapshot."""
