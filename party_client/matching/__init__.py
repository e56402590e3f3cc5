"""What is matched, in the clear on each party's side: normalization, field encoders and their
agreement, the rule model (DNF of a boolean or Fellegi-Sunter rule), the rules file, matching
keys, blocking passes, EM estimation of m and u, and linkage quality."""
