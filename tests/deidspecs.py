"""Small de-identification specs shared by the deid command tests (the sweep, the one-ending, the
threshold and the page tests): a claims table of persons with [longitudinal]."""

#: pid (person), sex and year of birth per person, dx per claim; threshold 0.2
CLAIMS_SPEC = """[columns]
pid = "direct"
sex = "quasi"
yob = "quasi"
dx = "quasi"
[hierarchies]
dx = { builder = "icd" }
yob = { builder = "interval", widths = [10, 20] }
[release]
threshold = 0.2
[longitudinal]
person = "pid"
level1 = ["sex", "yob"]
level2 = ["dx"]
adversary_power = 2
"""
