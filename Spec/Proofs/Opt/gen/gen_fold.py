"""Print the generated clauses of plus-opt-sound and mul-opt-sound (the body of Spec/Proofs/Opt/Fold.agda).

One line per (rule, head constructor); run regen.py to splice the output into the module.
Mirror Spec/Lang/Opt.agda: when a rule of opt changes, change the table here.
"""
CONS = [("var",1),("zero",0),("one",0),("imaps",1),("sels",2),("imap",1),("sel",2),("imapb",2),
        ("selb",3),("sum",1),("zero-but",3),("slide",4),("backslide",4),("un",2),
        ("bin plus",2),("bin mul",2),("bin max",2),("scaledown",2),("minus",1),("ix-minus",5),("ix-minusᵣ",5)]
def pat(c):
    n,k=c
    if k==0 and " " not in n: return n
    return "(" + n + " _"*k + ")"
def compat(a,b):
    return not ({a[0],b[0]} == {"imap","sels"})
Z=[c for c in CONS if c[0]=="zero"][0]
O=[c for c in CONS if c[0]=="one"][0]
lines=[]
L=lines.append
L("plus-opt-sound : (a b : E Γ (ar s)) (ρ : Env Γ) → ⟦ plus-opt a b ⟧ ρ ≈ ⟦ a ⊞ b ⟧ ρ")
L("plus-opt-sound zero b ρ = λ l → sym (+-identityˡ _)")
for A in CONS:
    if A==Z: continue
    L(f"plus-opt-sound {pat(A)} zero ρ = λ l → sym (+-identityʳ _)")
    for B in CONS:
        if B==Z or not compat(A,B): continue
        L(f"plus-opt-sound {pat(A)} {pat(B)} ρ = λ _ → refl")
L("")
L("mul-opt-sound : (a b : E Γ (ar s)) (ρ : Env Γ) → ⟦ mul-opt a b ⟧ ρ ≈ ⟦ a ⊠ b ⟧ ρ")
L("mul-opt-sound zero b ρ = λ l → sym (zeroˡ _)")
L("mul-opt-sound one zero ρ = λ l → sym (zeroʳ _)")
for B in CONS:
    if B in (Z,): continue
    L(f"mul-opt-sound one {pat(B)} ρ = λ l → sym (*-identityˡ _)")
ZB=[c for c in CONS if c[0]=="zero-but"][0]
IM=[c for c in CONS if c[0]=="imaps"][0]
for A in CONS:
    if A in (Z,O): continue
    pa = "(zero-but i j a)" if A==ZB else ("(imaps a)" if A==IM else pat(A))
    pa_named = pa if A in (ZB,IM) else "a@" + pat(A)
    L(f"mul-opt-sound {pat(A)} zero ρ = λ l → sym (zeroʳ _)")
    L(f"mul-opt-sound {pat(A)} one ρ = λ l → sym (*-identityʳ _)")
    for B in CONS:
        if B in (Z,O) or not compat(A,B): continue
        if A==ZB:
            L(f"mul-opt-sound (zero-but i j a) b@{pat(B)} ρ = mul-zbˡ i j a b ρ")
        elif B==ZB:
            L(f"mul-opt-sound a@{pat(A)} (zero-but i j b) ρ = mul-zbʳ i j a b ρ")
        elif A==IM:
            L(f"mul-opt-sound (imaps a) b@{pat(B)} ρ = mul-imapsˡ a b ρ")
        elif B==IM:
            L(f"mul-opt-sound {pa_named} (imaps b) ρ = mul-imapsʳ a b ρ")
        else:
            L(f"mul-opt-sound {pat(A)} {pat(B)} ρ = λ _ → refl")
print("\n".join(lines))
