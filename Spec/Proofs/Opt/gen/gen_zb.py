"""Print the generated clauses of sum-zb-sound's case analysis (the body of Spec/Proofs/Opt/SumZb.agda).

One line per (rule, head constructor); run regen.py to splice the output into the module.
Mirror Spec/Lang/Opt.agda: when a rule of opt changes, change the table here.
"""
out=[]; L=out.append
FB="λ _ → refl"
OTH=[("div","(div _ _)"),("mod","(mod _ _)"),("const","(ix-const _)"),("ixp","(ix-plus _ _ _ _)"),
     ("argmax","(argmax _ _)")]
# the heads that are not ix-plus (pin falls back on them)
LEAF=[p for n,p in OTH if n!="ixp"]
def case(c):
    # c=2: pin i′ j ; c=3: pin j′ i
    if c==2:
        lhs=lambda Y: f"sum-zb-sound i {Y} a ρ | just i′ | hi | nothing | _"
        PIN="zb-pinˡ i i′ a ρ hi"
        ML=lambda: "zb-minusˡ i J i′ J′ a su sp ρ hi hJ"
        MR=lambda K: f"zb-minusᵣ i {K} i′ K′ a su sp ρ hi hK"
    else:
        lhs=lambda Y: f"sum-zb-sound {Y} j a ρ | nothing | _ | just j′ | hj"
        PIN="zb-pinʳ j j′ a ρ hj"
        ML=lambda: "tr (zb-minusˡ j J j′ J′ a su sp ρ hj hJ) (zb-flip Y j a ρ)"
        MR=lambda K: f"tr (zb-minusᵣ j {K} j′ K′ a su sp ρ hj hK) (zb-flip Y j a ρ)"
    L(f"{lhs('(var y)')} with eq? v₀ y")
    L(f"... | eq      = {PIN}")
    L(f"... | neq _ _ = {FB}")
    for p in LEAF:
        L(f"{lhs(p)} = {FB}")
    # K = var z
    for Jn,Jp in [("var","(var y)")]+OTH:
        if Jn=="argmax":
            # str of an argmax is nothing: both branches fall back
            L(f"{lhs('Y@(ix-plus J@(argmax _ _) (var z) su sp)')} with eq? v₀ z")
            L(f"... | neq _ _ = {FB}")
            L(f"... | eq = {FB}")
            continue
        if Jn=="const":
            # str of a constant is just the constant, so it is not split on (a with on it
            # would not abstract the already reduced str in the goal)
            L(f"{lhs('Y@(ix-plus J@(ix-const c) (var z) su sp)')} with eq? v₀ z")
            L(f"... | neq _ _ = {FB}")
            ml = ML().replace(" J′ ", " (ix-const c) ").replace(" hJ", " (str-ok v₀ J)")
            L(f"... | eq = {ml}")
            continue
        Yp = f"Y@(ix-plus {Jp if Jn=='var' else 'J@'+Jp} (var z) su sp)"
        L(f"{lhs(Yp)} with eq? v₀ z")
        Jname = "(var y)" if Jn=="var" else "J"
        if Jn!="var": L(f"... | neq _ _ = {FB}")
        L(f"... | eq with str v₀ {Jname} | str-ok v₀ {Jname}")
        ml = ML().replace(" J ", f" {Jname} ")
        L(f"...   | just J′ | hJ = {ml}")
        L(f"...   | nothing | _  = {FB}")
        if Jn=="var":
            L(f"{lhs(Yp)} | neq _ z′ with eq? v₀ y")
            L(f"...   | neq _ _ = {FB}")
            L(f"...   | eq = {MR('(var z)').replace('K′','(var z′)').replace('hK','(str-ok v₀ (var z))')}")
    # K other
    for Kn,Kp in OTH:
        for Jn,Jp in [("var","(var y)")]+OTH:
            Yp = f"Y@(ix-plus {Jp} K@{Kp} su sp)"
            if Jn=="var" and Kn=="argmax":
                L(f"{lhs(Yp)} with eq? v₀ y")
                L(f"... | neq _ _ = {FB}")
                L(f"... | eq = {FB}")
            elif Jn=="var" and Kn=="const":
                Yp = "Y@(ix-plus (var y) K@(ix-const c) su sp)"
                L(f"{lhs(Yp)} with eq? v₀ y")
                L(f"... | neq _ _ = {FB}")
                mr = MR("K").replace("K′", "(ix-const c)").replace("hK", "(str-ok v₀ K)")
                L(f"... | eq = {mr}")
            elif Jn=="var":
                L(f"{lhs(Yp)} with eq? v₀ y")
                L(f"... | neq _ _ = {FB}")
                L(f"... | eq with str v₀ K | str-ok v₀ K")
                L(f"...   | just K′ | hK = {MR('K')}")
                L(f"...   | nothing | _  = {FB}")
            else:
                L(f"{lhs(Yp)} = {FB}")
L("sum-zb-sound : (i j : E (Γ ▹ ix s) (ix t)) (a : E (Γ ▹ ix s) (ar p)) (ρ : Env Γ)")
L("             → ⟦ sum-zb i j a ⟧ ρ ≈ ⟦ sum (zero-but i j a) ⟧ ρ")
L("sum-zb-sound i j a ρ with str v₀ i | str-ok v₀ i | str v₀ j | str-ok v₀ j")
L("... | just i′ | hi | just j′ | hj = zb-const i j i′ j′ a ρ hi hj")
case(2)
case(3)
B="sum-zb-sound {X} {Y} a ρ | nothing | {HX} | nothing | {HY}"
L(B.format(X="(var x)",Y="(var y)",HX="hx",HY="same")+" with SameVar-≡ hx")
L("... | refl = zb-both a ρ")
for _,p in OTH:
    L(B.format(X="(var x)",Y=p,HX="_",HY="_")+" = "+FB)
for _,p in OTH:
    L(B.format(X=p,Y="j",HX="_",HY="_")+" = "+FB)
print("\n".join(out))
