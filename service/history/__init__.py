"""Users' conversations, history and ratings: what an answered query leaves behind, re-checked when read."""
