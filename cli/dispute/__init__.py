"""`showdown dispute`: a hand's history exported as a signed bundle, verified and replayed."""
