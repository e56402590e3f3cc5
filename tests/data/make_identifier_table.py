"""Generate the labelled test table of the identifier detector (seeded; standard library + the name list).

    python tests/data/make_identifier_table.py

writes ``tests/data/identifier_columns.csv`` (synthetic health data, 300 rows) and
``tests/data/identifier_columns_labels.csv`` (column, kind: a kind of ``deid_core.detect.KINDS`` or
``none``). Identifier columns of every kind sit beside look-alikes that are not identifiers: ICD codes,
CPT codes, lab values, 3-digit ZIPs, years, ages <= 89, counts, repeated digit codes, drug names,
repeated free text.
"""
from __future__ import annotations

import csv
import random
import string
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROWS = 300
NAMES = sorted((HERE.parents[1] / "deid_core" / "data" / "person_names.txt").read_text().split())
GIVEN = ["James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
         "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Carlos", "Maria",
         "Nguyen", "Wei", "Fatima", "Ahmed", "Sofia", "Lucas", "Emma", "Olivia", "Noah", "Liam", "Ava", "Mia"]


def main() -> None:
    r = random.Random(20261123)
    cols: dict[str, tuple[str, list[str]]] = {}

    def add(name: str, kind: str, make) -> None:
        cols[name] = (kind, [make(i) for i in range(ROWS)])

    def cap(x: str) -> str:
        return x[:1].upper() + x[1:]

    def person_given() -> str:
        return r.choice(GIVEN) if r.random() < 0.4 else cap(r.choice(NAMES))

    def birth() -> date:
        return date(1925, 1, 1) + timedelta(days=r.randrange(0, 80 * 365))

    def digits(k: int) -> str:
        return "".join(r.choice(string.digits) for _ in range(k))

    def maybe(p: float, f):
        return lambda i: f(i) if r.random() >= p else ""

    # ---------------------------------------------------------------- identifiers
    add("patient_name", "name", lambda i: f"{person_given()} {cap(r.choice(NAMES))}")
    add("first_name", "name", lambda i: person_given())
    add("last_name", "name", lambda i: cap(r.choice(NAMES)))
    add("next_of_kin", "name", maybe(0.2, lambda i: f"{cap(r.choice(NAMES))}, {person_given()}"))
    add("referring_person", "name", lambda i: f"{person_given()} {r.choice(string.ascii_uppercase)}. "
                                              f"{cap(r.choice(NAMES))}")
    add("email", "email", lambda i: f"{r.choice(NAMES)}.{r.choice(NAMES)}{r.randrange(100)}@"
                                    f"{r.choice(['gmail.com', 'yahoo.com', 'example.org', 'mail.ca'])}")
    add("contact", "email", maybe(0.7, lambda i: f"{r.choice(NAMES)}{r.randrange(1000)}@example.net"))
    add("phone", "phone", lambda i: f"({digits(3)}) 555-{digits(4)}")
    add("home_tel", "phone", lambda i: f"{r.choice(['617', '212', '415'])}-{digits(3)}-{digits(4)}")
    add("fax", "phone", lambda i: f"{digits(3)}.{digits(3)}.{digits(4)}")
    add("intl_phone", "phone", lambda i: f"+44 20 {digits(4)} {digits(4)}")
    add("mobile", "phone", lambda i: f"+1 {digits(3)} {digits(3)} {digits(4)}")
    add("ssn", "ssn", lambda i: f"{digits(3)}-{digits(2)}-{digits(4)}")
    add("soc_sec_raw", "long_digits", lambda i: digits(9))
    add("mrn", "long_digits", lambda i: f"{i * 7919 % 10 ** 8:08d}")
    add("visit_mrn", "long_digits", lambda i: f"{(i // 3) * 104729 % 10 ** 7:07d}")
    add("health_plan_no", "long_digits", lambda i: digits(10))
    add("account", "long_digits", lambda i: f"{digits(2)}-{digits(7)}")
    add("card_number", "long_digits", lambda i: " ".join(digits(4) for _ in range(4)))
    add("homepage", "url", lambda i: f"https://www.{r.choice(NAMES)}{r.randrange(99)}.com/about")
    add("profile", "url", maybe(0.5, lambda i: f"www.social.example/{r.choice(NAMES)}{r.randrange(999)}"))
    add("login_ip", "ip", lambda i: ".".join(str(r.randrange(1, 255)) for _ in range(4)))
    add("ipv6", "ip", lambda i: "2001:db8:" + ":".join(f"{r.randrange(65536):x}" for _ in range(3)) + "::1")
    add("dob", "date", lambda i: birth().isoformat())
    add("admitted_us", "date", lambda i: birth().strftime("%m/%d/%Y"))
    add("discharged_eu", "date", lambda i: birth().strftime("%d.%m.%Y"))
    add("seen_at", "date", lambda i: f"{birth().isoformat()} {r.randrange(24):02d}:{r.randrange(60):02d}")
    add("procedure_on", "date", lambda i: birth().strftime("%B %d, %Y"))
    add("specimen_date", "date", lambda i: birth().strftime("%Y%m%d"))
    add("zip", "zip5", lambda i: f"{r.choice(['021', '100', '941', '606', '787'])}{digits(2)}")
    add("zip_plus4", "zip5", lambda i: f"{r.choice(['021', '100'])}{digits(2)}-{digits(4)}")
    add("residence", "zip5", lambda i: f"{r.randrange(1000, 99999):05d}")
    add("age", "age_over_89", lambda i: str(r.choice([r.randrange(18, 90)] * 9 + [r.randrange(90, 105)])))
    add("age_at_diagnosis", "age_over_89", lambda i: str(r.randrange(40, 98)))
    add("device_serial", "serial", lambda i: "SN-" + "".join(r.choice("0123456789ABCDEF") for _ in range(8)))
    add("pacemaker_id", "serial", lambda i: f"PM{digits(4)}{r.choice(string.ascii_uppercase)}{digits(1)}")
    add("vin", "serial", lambda i: "".join(r.choice("ABCDEFGHJKLMNPRSTUVWXYZ0123456789") for _ in range(17)))
    add("licence", "serial", lambda i: f"{r.choice(string.ascii_uppercase)}{digits(7)}")
    add("plate", "serial", lambda i: f"{r.randrange(1, 9)}{''.join(r.choices(string.ascii_uppercase, k=3))}{digits(3)}")
    words = ("patient reports mild chest pain since yesterday denies fever cough shortness of breath nausea "
             "history of hypertension diabetes follow up in two weeks with primary care lab results pending "
             "advised rest fluids ibuprofen as needed wife present at visit daughter called").split()
    add("note", "free_text", lambda i: " ".join(r.choice(words) for _ in range(r.randrange(8, 20))).capitalize()
        + ".")
    add("chief_complaint", "free_text", lambda i: f"{r.choice(['Pain', 'Swelling', 'Rash', 'Cough'])} in "
        f"{r.choice(['left', 'right'])} {r.choice(['arm', 'leg', 'knee', 'hand', 'foot'])} for {r.randrange(1, 60)} "
        f"days after {r.choice(['fall', 'gardening', 'running', 'lifting', 'a car accident'])}")
    # ---------------------------------------------------------------- look-alikes (not identifiers)
    icd9 = ["0389", "25000", "4019", "41401", "4280", "486", "5990", "V5861", "E8889", "2724", "311", "49390"]
    add("dx_icd9", "none", lambda i: r.choice(icd9))
    icd10 = ["E11.9", "I10", "C50.911", "J45.909", "N39.0", "F32.A", "Z79.4", "I25.10", "K21.9", "M54.5"]
    add("dx_icd10", "none", lambda i: r.choice(icd10))
    add("cpt_code", "none", lambda i: r.choice(["99213", "99214", "93000", "80053", "85025", "71046", "36415"]))
    add("drg", "none", lambda i: r.choice(["291", "292", "871", "872", "470"]))
    add("glucose", "none", lambda i: str(r.randrange(65, 320)))
    add("hemoglobin", "none", lambda i: f"{r.uniform(8, 17):.1f}")
    add("sodium", "none", lambda i: f"{r.uniform(128, 148):.1f}")
    add("weight_kg", "none", lambda i: f"{r.uniform(40, 140):.2f}")
    add("charges_cents", "none", lambda i: str(int(r.lognormvariate(12.5, 1.0))))
    add("zip3", "none", lambda i: r.choice(["021", "100", "941", "606", "787", "000"]))
    add("birth_year", "none", lambda i: str(birth().year))
    add("admit_month", "none", lambda i: birth().strftime("%Y-%m"))
    add("age_years", "none", lambda i: str(r.randrange(18, 90)))
    add("age_released", "none", lambda i: r.choice([str(r.randrange(18, 90))] * 9 + ["90+"]))
    add("n_visits", "none", lambda i: str(r.randrange(0, 14)))
    add("los_days", "none", lambda i: str(r.randrange(1, 45)))
    add("facility_id", "none", lambda i: r.choice(["100234", "100871", "204455", "310022", "310023"]))
    add("ndc", "none", lambda i: r.choice(["00002-3227-30", "00093-7212-01", "00378-0208-01", "68180-0513-01"]))
    add("loinc", "none", lambda i: r.choice(["2345-7", "718-7", "2951-2", "4548-4", "2160-0"]))
    add("drug", "none", lambda i: r.choice(["Metformin", "Lisinopril", "Atorvastatin", "Levothyroxine",
                                             "Amlodipine", "Omeprazole", "Albuterol", "Warfarin", "Insulin glargine",
                                             "Sertraline", "Gabapentin", "Hydrochlorothiazide"]))
    add("drug_dose", "none", lambda i: f"{r.choice(['Metformin', 'Lisinopril', 'Warfarin'])} "
                                       f"{r.choice(['5', '10', '20', '500'])} mg")
    add("discharge_note", "none", lambda i: r.choice(["No acute distress.", "Patient tolerated procedure well.",
                                                       "Discharged home with family.", "Follow up with primary care in two weeks."]))
    add("sex", "none", lambda i: r.choice(["F", "M"]))
    add("race", "none", lambda i: r.choice(["White", "Black", "Asian", "American Indian", "Other"]))
    add("insurance", "none", lambda i: r.choice(["Medicare", "Medicaid", "Private", "Self-pay"]))
    add("hospital", "none", lambda i: r.choice(["Massachusetts General Hospital", "Boston Medical Center",
                                                 "Mount Sinai Hospital", "Saint Francis Hospital"]))
    add("attending_specialty", "none", lambda i: r.choice(["Cardiology", "Oncology", "Internal Medicine"]))
    add("blood_pressure", "none", lambda i: f"{r.randrange(95, 180)}/{r.randrange(55, 110)}")
    add("admit_time", "none", lambda i: f"{r.randrange(24):02d}:{r.randrange(60):02d}:00")
    add("stage", "none", lambda i: r.choice(["I", "IIA", "IIB", "IIIA", "IV"]))
    add("bmi", "none", lambda i: f"{r.uniform(17, 45):.1f}")
    add("hba1c_pct", "none", lambda i: f"{r.uniform(4.5, 12):.1f}%")
    add("device_model", "none", lambda i: r.choice(["Azure XT DR", "Advisa MRI", "Assurity 2272"]))
    add("variant", "none", lambda i: r.choice(["BRCA1 c.68_69delAG", "BRCA2 c.5946delT", "none detected"]))
    add("ward_bed", "none", lambda i: f"{r.choice('1234')}{r.choice('ABC')}-{r.randrange(1, 30)}")
    add("quarter", "none", lambda i: f"{r.randrange(2015, 2024)}Q{r.randrange(1, 5)}")

    table = HERE / "identifier_columns.csv"
    with open(table, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(cols)
        out.writerows(zip(*(values for _, values in cols.values())))
    with open(HERE / "identifier_columns_labels.csv", "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["column", "kind"])
        out.writerows((name, kind) for name, (kind, _) in cols.items())
    print(f"{len(cols)} columns x {ROWS} rows -> {table}")


if __name__ == "__main__":
    main()
