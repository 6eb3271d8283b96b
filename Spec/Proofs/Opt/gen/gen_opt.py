"""Print the generated clauses of opt-sound's case analysis (the body of Spec/Proofs/Opt/Main.agda).

One line per (rule, head constructor); run regen.py to splice the output into the module.
Mirror Spec/Lang/Opt.agda: when a rule of opt changes, change the table here.
"""
CONS = [("var",1),("zero",0),("one",0),("imaps",1),("sels",2),("imap",1),("sel",2),("imapb",2),
        ("selb",3),("sum",1),("zero-but",3),("slide",4),("backslide",4),("un",2),
        ("bin",3),("scaledown",2),("minus",1),("ix-minus",5),("ix-minusᵣ",5)]
CONS_SPLITBIN = [c for c in CONS if c[0]!="bin"] + [("bin plus",2),("bin mul",2),("bin max",2)]
def pat(c, named=False):
    n,k=c
    if k==0 and " " not in n: return ("X@" if named else "")+n
    return ("X@" if named else "")+"(" + n + " _"*k + ")"
out=[]
L=out.append
def zero_only_group(head, withs, zero_rhs, other_rhs, excl=(), cons=CONS, pre=""):
    # head: LHS of opt-sound clause; withs: with-expression list after opt e
    L(f"{head} with {withs}")
    for c in cons:
        if c[0] in excl: continue
        rhs = zero_rhs if c[0]=="zero" else other_rhs
        L(f"... | {pre}{pat(c, c[0]!='zero')} | h = {rhs}")
    L("")

# imaps
zero_only_group("opt-sound (imaps e) ρ", "opt e | opt-sound e",
    "λ i → h (ρ , i) (ι F.zero)", "λ i → h (ρ , i) (ι F.zero)", excl=("imap",))
# imap
zero_only_group("opt-sound (imap e) ρ", "opt e | opt-sound e",
    "λ { (i ⊗ j) → h (ρ , i) j }", "λ { (i ⊗ j) → h (ρ , i) j }")
# imapb
zero_only_group("opt-sound (imapb m e) ρ", "opt e | opt-sound e",
    "λ k → h (ρ , Ix.div m k) (Ix.mod m k)", "tr (imapb-η m X ρ) (λ k → h (ρ , Ix.div m k) (Ix.mod m k))")

# sels
L("opt-sound (sels e i) ρ with opt e | opt-sound e | opt i | opt-sound i")
L("... | zero | h | i′ | hi = λ _ → h ρ (⟦ i ⟧ ρ)")
L("... | one  | h | i′ | hi = λ _ → h ρ (⟦ i ⟧ ρ)")
C = "(sels-cong X e i′ i ρ (h ρ) (hi ρ))"
sp = {
 "imaps": ("X@(imaps a)", f"tr (sels-imaps a i′ ρ) {C}"),
 "sum": ("X@(sum a)", f"tr (sels-sum a i′ ρ) {C}"),
 "zero-but": ("X@(zero-but j k a)", f"tr (sels-zero-but j k a i′ ρ) {C}"),
 "ix-minus": ("X@(ix-minus j k sp su a)", f"tr (sels-ix-minus j k sp su a i′ ρ) {C}"),
 "ix-minusᵣ": ("X@(ix-minusᵣ j k sp su a)", f"tr (sels-ix-minusᵣ j k sp su a i′ ρ) {C}"),
}
for c in CONS:
    if c[0] in ("zero","one"): continue
    if c[0] in sp: p,r = sp[c[0]]
    else: p,r = pat(c,True), C
    L(f"... | {p} | h | i′ | hi = {r}")
L("")

# sel
L("opt-sound (sel e i) ρ with opt e | opt-sound e | opt i | opt-sound i")
L("... | zero | h | i′ | hi = λ j → h ρ (⟦ i ⟧ ρ ⊗ j)")
L("... | one  | h | i′ | hi = λ j → h ρ (⟦ i ⟧ ρ ⊗ j)")
C = "(sel-cong X e i′ i ρ (h ρ) (hi ρ))"
sp = {
 "imap": ("X@(imap a)", f"tr (sel-imap a i′ ρ) {C}"),
 "sum": ("X@(sum a)", f"tr (sel-sum a i′ ρ) {C}"),
 "zero-but": ("X@(zero-but j k a)", f"tr (sel-zero-but j k a i′ ρ) {C}"),
 "ix-minus": ("X@(ix-minus j k sp su a)", f"tr (sel-ix-minus j k sp su a i′ ρ) {C}"),
 "ix-minusᵣ": ("X@(ix-minusᵣ j k sp su a)", f"tr (sel-ix-minusᵣ j k sp su a i′ ρ) {C}"),
}
for c in CONS:
    if c[0] in ("zero","one","sels"): continue
    if c[0] in sp: p,r = sp[c[0]]
    else: p,r = pat(c,True), C
    L(f"... | {p} | h | i′ | hi = {r}")
L("")

# selb
L("opt-sound (selb m e i) ρ with opt e | opt-sound e | opt i | opt-sound i")
L("... | zero | h | i′ | hi = λ j → h ρ (combine m (⟦ i ⟧ ρ) j)")
L("... | one  | h | i′ | hi = λ j → h ρ (combine m (⟦ i ⟧ ρ) j)")
C = "(selb-cong m X e i′ i ρ (h ρ) (hi ρ))"
sp = {
 "sum": ("X@(sum a)", f"tr (selb-sum m a i′ ρ) {C}"),
 "zero-but": ("X@(zero-but j k a)", f"tr (selb-zero-but m j k a i′ ρ) {C}"),
 "ix-minus": ("X@(ix-minus j k sp su a)", f"tr (selb-ix-minus m j k sp su a i′ ρ) {C}"),
 "ix-minusᵣ": ("X@(ix-minusᵣ j k sp su a)", f"tr (selb-ix-minusᵣ m j k sp su a i′ ρ) {C}"),
}
for c in CONS:
    if c[0] in ("zero","one"): continue
    if c[0] in sp: p,r = sp[c[0]]
    else: p,r = pat(c,True), C
    L(f"... | {p} | h | i′ | hi = {r}")
L("")

# sum
L("opt-sound (sum {s = t} e) ρ with opt e | opt-sound e")
C = "(sum-cong′ X e ρ h)"
sp = {
 "zero": ("X@zero", f"tr (sum-zero-sound {{s = t}} ρ) {C}"),
 "imaps": ("X@(imaps a)", f"tr (sum-imaps a ρ) {C}"),
 "imap": ("X@(imap a)", f"tr (sum-imap a ρ) {C}"),
 "minus": ("X@(minus a)", f"tr (sum-minus a ρ) {C}"),
 "bin plus": ("X@(bin plus a b)", f"tr (sum-plus a b ρ) {C}"),
 "zero-but": ("X@(zero-but i j a)", f"tr (sum-zb-sound i j a ρ) {C}"),
}
for c in CONS_SPLITBIN:
    if c[0] in sp: p,r = sp[c[0]]
    else: p,r = pat(c,True), C
    L(f"... | {p} | h = {r}")
L("")

# zero-but
zero_only_group("opt-sound (zero-but i j e) ρ", "opt e | opt-sound e",
   "zb-zero (⟦ i ⟧ ρ ≟ₚ ⟦ j ⟧ ρ) (h ρ)",
   "zero-but-cong (opt-sound i ρ) (opt-sound j ρ) (h ρ)")
# slide
L("opt-sound (slide i sp e su) ρ with opt i | opt-sound i | opt e | opt-sound e")
for c in CONS:
    if c[0]=="zero":
        L("... | i′ | hi | zero | h = λ j → h ρ _")
    else:
        L(f"... | i′ | hi | {pat(c,True)} | h = tr (slide-η i′ X sp su ρ) (λ j → trans (h ρ _) (cong (λ y → ⟦ e ⟧ ρ ((y ⊕ₚ j) su sp)) (hi ρ)))")
L("")
L("opt-sound (backslide i e su sp) ρ with opt i | opt-sound i | opt e | opt-sound e")
for c in CONS:
    if c[0]=="zero":
        L("... | i′ | hi | zero | h = backslide-zero (⟦ i ⟧ ρ) su sp (h ρ)")
    else:
        L(f"... | i′ | hi | {pat(c,True)} | h = tr (backslide-η i′ X su sp ρ) (backslide-cong su sp (hi ρ) (h ρ))")
L("")
L("opt-sound (un f e) ρ = λ l → cong (fn f) (opt-sound e ρ l)")
L("opt-sound (bin plus e e₁) ρ =")
L("  tr (plus-opt-sound (opt e) (opt e₁) ρ) (λ l → cong₂ _+_ (opt-sound e ρ l) (opt-sound e₁ ρ l))")
L("opt-sound (bin mul e e₁) ρ =")
L("  tr (mul-opt-sound (opt e) (opt e₁) ρ) (λ l → cong₂ _*_ (opt-sound e ρ l) (opt-sound e₁ ρ l))")
L("opt-sound (bin max e e₁) ρ = λ l → cong₂ maxʳ (opt-sound e ρ l) (opt-sound e₁ ρ l)")
L("")
L("opt-sound (scaledown n e) ρ with opt e | opt-sound e")
for c in CONS:
    if c[0]=="zero": L("... | zero | h = λ l → trans (sym (scaledown-0# n)) (cong (scaledownʳ n) (h ρ l))")
    elif c[0]=="sum": L("... | sum a | h = tr (scaledown-sum n a ρ) (λ l → cong (scaledownʳ n) (h ρ l))")
    else: L(f"... | {pat(c,True)} | h = λ l → cong (scaledownʳ n) (h ρ l)")
L("")
L("opt-sound (minus e) ρ with opt e | opt-sound e")
for c in CONS:
    if c[0]=="zero": L("... | zero | h = λ l → trans (sym -‿0#) (cong -_ (h ρ l))")
    elif c[0]=="minus": L("... | minus a | h = λ l → trans (sym (-‿involutive _)) (cong -_ (h ρ l))")
    else: L(f"... | {pat(c,True)} | h = λ l → cong -_ (h ρ l)")
L("")
L("opt-sound (ix-const i) ρ = refl")
L("opt-sound (div m i) ρ = cong (Ix.div m) (opt-sound i ρ)")
L("opt-sound (mod m i) ρ = cong (Ix.mod m) (opt-sound i ρ)")
L("opt-sound (ix-plus i j su sp) ρ = cong₂ (λ a b → (a ⊕ₚ b) su sp) (opt-sound i ρ) (opt-sound j ρ)")
L("opt-sound (argmax w e) ρ = argmax-sem-cong w λ i → opt-sound e (ρ , i) (ι F.zero)")
L("")
for nm, dec in (("ix-minus","⊖ₚ"),("ix-minusᵣ","⊖ᵣₚ")):
    L(f"opt-sound ({nm} i j sp su e) ρ with opt e | opt-sound e")
    for c in CONS:
        if c[0]=="zero": L(f"... | zero | h = at-zero ((⟦ i ⟧ ρ {dec} ⟦ j ⟧ ρ) su sp) (λ k → h (ρ , k))")
        else: L(f"... | {pat(c,True)} | h = {nm}-cong sp su (opt-sound i ρ) (opt-sound j ρ) (λ k → h (ρ , k))")
    L("")
print("\n".join(out))
