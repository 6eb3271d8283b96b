{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The theorems proved about the language, stated on their own so that
-- a reader can review the claims without reading the proofs.  Each
-- statement below is a type; its proof is imported from
-- Spec.Proofs.*.  Array values are compared pointwise (`Same`, from
-- Spec.Proofs.Val: ∀ i → a i ≡ b i for arrays, _≡_ for positions);
-- there is no function extensionality.
--
-- 1. eval-ren        renaming preserves meaning: if looking up ρ x in γ
--                    gives what looking up x gives in δ, then
--                    ren ρ e means in γ what e means in δ.
--    eval-↑          weakening by a fresh innermost variable.
--    eval-wk         weakening at a variable v: wk v e means in γ what e
--                    means in γ without v.
--    eval-ctx-swap   exchanging a variable with the next one inwards.
-- 2. eval-sub        substitution preserves meaning: if each σ x means in
--                    γ what x means in δ, subst σ e means in γ what e
--                    means in δ.
--    eval-sub₁       replacing one variable v by e₁ (`sub v e e₁`) means
--                    e with the meaning of e₁ put back at v.
--
-- None of these needs a law of the scalars: they hold for every
-- `Scalar`, Float included.
--
-- 3. opt-sound       the optimiser preserves meaning: ⟦ opt e ⟧ ρ and
--                    ⟦ e ⟧ ρ agree at every position, for every e and ρ;
--    opt*-sound      so does any number of passes,
--    optimise-sound  and the optimiser the dump uses.
--    These assume `Laws 𝕊`: 0# 1# _+_ _*_ -_ form a commutative ring
--    (with _≡_) and scaledown n is additive.  They cover every rule of
--    Spec.Lang.Opt (selections, η-rules for blocks and windows, sums,
--    sum-zb, constant folding).
--
-- 4. ∇-correct       reverse mode is the adjoint of forward mode: for
--                    every array expression e, seed s, gradient
--                    environment δ, environment ρ and tangents v,
--                      ipE Δ (∇ e s δ) ρ v ≡ ipE Δ δ ρ v + ⟨ ⟦ s ⟧ ρ , D⟦ e ⟧ ρ v ⟩
--    ∇₀-correct      from the zero environment (the paper's statement):
--                      Σₓ ⟨ ⟦ (∇₀ e s)ₓ ⟧ ρ , vₓ ⟩ ≡ ⟨ ⟦ s ⟧ ρ , D⟦ e ⟧ ρ v ⟩
--    where ⟨ a , b ⟩ = Σᵢ aᵢ · bᵢ over all positions, ipE Δ δ ρ v sums
--    ⟨ ⟦ δₓ ⟧ ρ , vₓ ⟩ over the array variables x of Δ (index variables
--    carry no derivative; Spec.Proofs.AD.Env), and D⟦ e ⟧ ρ v is the
--    forward derivative of e at ρ in direction v (Spec.Proofs.Forward;
--    by item 9 it is the ε-part of evaluating e over dual numbers).
--    The derivatives of the elementwise functions (un f,
--    Spec.Scalar.Fn) and of max (a ⊔ b) are declared, not proved
--    (Spec.Scalar.Derivatives, re-exported by Spec.Proofs.Forward):
--      logistic′ x = logistic x · (1 − logistic x)
--      exp′ x      = exp x
--      log′ x      = recip x
--      recip′ x    = − (recip x · recip x)
--      sqrt′ x     = recip (sqrt x + sqrt x)
--      relu′ x     = step x     (at 0: step 0, which is 0 in Float)
--      step′ x     = 0
--      detach′ x   = 0          (the stop-gradient: detach x = x in
--                               Float, ℤ and ℚ; its value is opaque here)
--      erf′ x      = derf x     (derf is a primitive function of its own,
--                               standing for (2/√π) · e^(−x²): E has no
--                               constant 2/√π; nothing relates derf to
--                               erf or exp but these two declarations)
--      derf′ x     = − ((x + x) · derf x)
--                               (in Float, derf x = 1.1283791670955126 ·
--                               e^(−x²), 2/√π as the nearest double, and
--                               erf x is NaN: Agda's Float has no erf,
--                               and the generated C calls libm's erff /
--                               erf; Spec.Scalar.Float)
--      D(a ⊔ b)    = st · Da + (1 − st) · Db,  st = step (a − b)
--                    (at a tie st = step 0, 0 in Float: b gets it all)
--    and ∇ uses exactly these (Spec.Lang.AD, deriv and max-step), so
--    the theorem holds relative to them, for every choice of the
--    functions and of max.  Assumes `Laws 𝕊`, including scaledown-*;
--    nothing about the elementwise functions or max.
--    The max-reduction needs no declared fact of its own: it is the
--    index expression `argmax w e` (the first position of s, in
--    row-major order, where the scalar body e is largest, by the
--    scalar structure's comparison `less`, of which nothing is
--    assumed), and the maximum is the selection
--    maxs w e = sels (imaps e) (argmax w e).  Index expressions carry
--    no tangent, so D of the maximum is D of the body at the argmax:
--    the gradient goes to the first maximal position (the envelope
--    derivative, exact wherever the maximum is unique).  All of items
--    1-11 cover argmax: renaming, substitution, opt (opt-sound),
--    locality, dual numbers (the dual `less` compares the values, so
--    both evaluations pick the same position) and the dump.
--
-- 5. D-sub           the chain rule for inlining: the forward derivative
--                    of subst σ e in direction w is that of e in the
--                    direction whose entry x is the derivative of σ x
--                    (given eval-sub's hypothesis on the values).
--    D-ren           the same for renamings.  No law needed.
--    (These are the forward half of the Chain theorem, item 6.)
--
-- 6. chain-adjoint   reverse mode over a let-chain (Spec.Lang.Chain) is
--                    the adjoint of forward mode through the chain: for
--                    a chain c over the base context Γ₀ = baseCtx c with
--                    full scope Φ, objective y, seed, an environment γ
--                    of Φ and base tangents v,
--                      ipE Γ₀ (base-env c y seed) γ v ≡ ⟨ ⟦ seed ⟧ γ , (ctan c γ v)_y ⟩
--                    where base-env is the typed list of base gradients
--                    of chain-grads (chain-grads-split: chain-grads c y
--                    seed is exactly the binding entries followed by
--                    those of base-env), ctan is forward mode through
--                    the chain (x = e gets D⟦ e ⟧, placeholders get 0),
--                    and γ is Consistent: each placeholder d_x holds the
--                    value of the entry chain-grads emits for x.
--    chain-∇-correct for a placeholder-free chain (PF: every binding is
--                    `ren (emb c) e′` of an expression over the base
--                    variables and earlier bindings) whose bindings hold
--                    their values in γ (ValCons), with e* = inl c pf y
--                    the objective with every binding inlined and s₀ a
--                    seed over Γ₀ with the value of `seed`: for every
--                    base array variable x and position i,
--                      ⟦ (base-env c (emb c y) seed)ₓ ⟧ γ i ≡ ⟦ (∇₀ e* s₀)ₓ ⟧ γ₀ i
--                    (γ₀ = base-env₀ c γ, the base part of γ): the shared
--                    chain gradients equal those of the inlined
--                    expression.  Assumes `Laws 𝕊`.  Spec.Proofs.Chain.
--                    Example discharges every hypothesis for the paper's
--                    chain example (x = a·b, y = x·x) by hand; item 9
--                    discharges Consistent and ValCons for every PF
--                    chain (chain-values).
--
-- 7. infer-faithful  the elaborator of the model language (Spec.Front)
--                    is faithful: whenever it turns a core term t into
--                    an expression e of E, e erases back to t
--                    (⌊ e ⌋ ≡ t: the elaborator only decides shapes and
--                    the witnesses of the shape relations, and which of
--                    imap/imaps, sel/sels, bin plus/ix-plus a node is),
--                    whatever sorts-by-level σ it reads variables from
--                    (Spec.Front.Sorts: a trie whose entries carry the
--                    evidence that they are the context's).
--    elaborate-faithful  for a whole model file: the bindings of the
--                    elaborated chain, erased, are the model's bindings
--                    as core terms, with their names, in order.  A core
--                    term is the user's expression with names resolved
--                    and layers expanded (Spec.Front.Expand, .Layers).
--    cnn-elaborates  the paper's network as a model file (the text of
--                    models/cnn.model, which tests/test_front.py checks
--                    is the literal cnn-text) elaborates to the chain
--                    of Spec.Model.CNN itself, as a term, by refl
--                    (Spec.Front.Examples).  No law needed: these hold for
--                    every `Scalar`, and every chain they produce is a
--                    `Chain`, so items 1-6 apply to it.
--
-- 8. PF, decided      the hypothesis PF of chain-∇-correct is decided
--                    by running `pf?` (Spec.Lang.Chain.Clean, through
--                    Spec.Lang.Unren): elaborated-pf says every
--                    elaborated model carries its proof, and
--                    Spec.Model.PF holds those of the shipped chains
--                    (cnn, dot, chain, ops).  pf? is complete
--                    (pf?-complete, Spec.Proofs.Chain.Clean): it
--                    finds a proof whenever one exists, so the
--                    elaborator's rejection "a binding mentions a
--                    derivative placeholder" means the chain is not
--                    PF (pf?-nothing).  The other hypotheses,
--                    Consistent and ValCons, are discharged by item 9.
--
-- 9. chain-env       the environment the generated code computes, built:
--                    from values γ₀ of the base variables, chain-env c y
--                    seed γ₀ evaluates the forward bindings first to
--                    last (placeholders 0), then sets each placeholder
--                    d_x, bindings last to first, to the value of the
--                    entry chain-grads emits for x, optimised as the
--                    dump prints it, in the environment built so far
--                    (Spec.Proofs.Chain.Build).  For every
--                    PF chain c, clean variable y and seed that reads no
--                    placeholder (seed = ren (emb c) s′, s′ over the
--                    clean scope), with γ = chain-env c (emb c y) seed γ₀:
--    chain-env-consistent  Consistent c here γ (seed-env (emb c y) seed);
--    chain-env-values      ValCons c γ;
--    chain-env-base        γ's base variables hold γ₀;
--    chain-values          so, with chain-∇-correct and no hypothesis
--                          left: for every base array variable x and
--                          position i,
--                      ⟦ (base-env c (emb c y) seed)ₓ ⟧ γ i ≡ ⟦ (∇₀ e* s₀)ₓ ⟧ γ₀ i
--                    with e* = inl c pf y and s₀ = subst (inl c pf) s′
--                    the inlined objective and seed.  The key is the
--                    locality of reverse mode:
--    eval-only       if every variable of e satisfies A (`Only A e`,
--                    syntactic), e means the same in two environments
--                    that agree on A;
--    ∇-only          if e, the seed and every entry of δ read only
--                    variables in A, so does every entry of ∇ e sd δ.
--                    So the entry for x reads no placeholder of x or of
--                    a binding before x, and filling those later does
--                    not change its value.  Assumes `Laws 𝕊` (for
--                    optimise-sound and chain-∇-correct); eval-only and
--                    ∇-only need no law.
--
-- 10. dump-correct   the gradients Main prints, end to end.  Main dumps
--                    `chain-grads-opt c seed` (computing it as
--                    chain-grads-optˢ, dump-sparse): the reverse pass seeded
--                    on the last binding, every entry through `optimise`
--                    (Spec.Dump.Model; the entries of inputs and
--                    consts are then left out).  For every PF chain c,
--                    every seed =
--                    ren (emb c) s′, every γ₀, and (for dump-values,
--                    dump-adjoint) any clean variable y as objective:
--      dump-grads    the optimised list is the optimised binding
--                    entries, then env-grads of env-map optimise
--                    (base-env c y seed);
--      dump-values   each of those base entries, evaluated in
--                    γ = chain-env c (emb c y) seed γ₀, is at every
--                    position the entry of ∇₀ e* s₀ at γ₀ (e* = inl c pf y
--                    the inlined objective, s₀ the inlined seed);
--      dump-adjoint  hence (∇₀-correct) they pair with every base
--                    tangent v as the forward derivative does:
--                      Σₓ ⟨ ⟦ optimise (chain gradient)ₓ ⟧ γ , vₓ ⟩ ≡ ⟨ ⟦ s₀ ⟧ γ₀ , D⟦ e* ⟧ γ₀ v ⟩;
--      dump-correct  both for Main's objective, the last binding
--                    (v₀ = emb c (top c)): the list chain-grads-opt c
--                    seed, and the values of its base entries.
--      dump-sparse   Main computes that list with a sparse gradient
--                    environment (Spec.Lang.AD.Sparse: a trie keyed by
--                    the variables' levels, O(log n) per occurrence and
--                    binder around it, where
--                    ∇'s dense one walks the context): chain-grads-optˢ c
--                    seed ≡ chain-grads-opt c seed, the same expressions
--                    (∇-sparse: dense Δ (∇ˢ (len Δ) e s t) ≡ ∇ e s (dense Δ t));
--                    no law, no hypothesis.
--    It composes optimise-sound, chain-grads-split, chain-∇-correct and
--    item 9.  Instances, for every chain Main prints: cnn-dump,
--    dot-dump, chain-dump, ops-dump (Spec.Model.*, PF from
--    Spec.Model.PF) and elaborated-dump (every elaborated model file,
--    seeded with `one` as Main does).  Assumes `Laws 𝕊`.
--
--
-- 11. D-dual         the forward derivative is evaluation over dual
--                    numbers: for every array expression e, environment
--                    ρ, tangents v and position i,
--                      ⟦ e ⟧ᴰ (dual-env ρ v) i ≡ (⟦ e ⟧ ρ i , D⟦ e ⟧ ρ v i)
--                    where ⟦_⟧ᴰ is ⟦_⟧ over Dual 𝕊 (Spec.Scalar.Dual:
--                    pairs (a , a′) = a + a′ε with ε² = 0; +, - and
--                    scaledown componentwise, the product that of
--                    a + a′ε and b + b′ε, and the primitives carrying
--                    their declared derivatives: fn f (a , a′) =
--                    (fn f a , f′ f a · a′), max (a , a′) (b , b′) =
--                    (max a b , st · a′ + (1 − st) · b′)), and
--                    dual-env ρ v pairs each array variable's value with
--                    its tangent (index variables unchanged).  So the
--                    sum, product and chain rules of D⟦_⟧ (item 4) are
--                    a theorem; the derivatives of the primitives
--                    (f′, max-sel: Spec.Scalar.Derivatives) are the only
--                    declared facts.  No law needed.
--    ∇₀-dual         with ∇₀-correct: the reverse-mode gradients pair
--                    with the tangents as the seed pairs with the ε-part
--                    of the dual evaluation:
--                      Σₓ ⟨ ⟦ (∇₀ e s)ₓ ⟧ ρ , vₓ ⟩ ≡ ⟨ ⟦ s ⟧ ρ , proj₂ ∘ ⟦ e ⟧ᴰ (dual-env ρ v) ⟩
--                    Assumes `Laws 𝕊` (for ∇₀-correct).
--
-- 12. Instances      the hypothesis `Laws 𝕊` of items 3, 4, 6, 9 and 10 is
--                    satisfiable, so those theorems are not vacuous:
--                    Spec.Scalar.Int (ℤ-scalar, ℤ-laws) and Spec.Scalar.
--                    Rational (ℚ-scalar, ℚ-laws) are scalar structures
--                    with their laws, the ring laws being the standard
--                    library's.  Over ℤ scaledown n is the identity (no
--                    division); over ℚ it is x · (1/n) for n ≥ 1 and
--                    x · 0 for n = 0.  Both take relu x = x ⊔ 0, step x
--                    = 1 if x > 0 else 0, max = _⊔_, detach x = x,
--                    less = <, and the constant 0 for logistic, exp,
--                    log, recip, sqrt, erf, derf (the theorems assume
--                    nothing of these).  Spec.Theorems.Instances
--                    applies optimise-sound, ∇-correct, ∇₀-correct,
--                    chain-adjoint, chain-∇-correct, dump-correct (and
--                    cnn-dump) and cnn-forward to both, with their
--                    types restated for the instance, and checks by refl
--                    that over ℤ the chain example's gradients at
--                    a = 2, b = 3 are d_a = 2ab² = 36 and d_b = 2ba² =
--                    24, shared through the chain and by ∇₀ of the
--                    inlined objective alike.
--
-- 13. cnn-forward    the paper's network written on arrays
--                    (Spec.CNN.Array.forward: convolutions as sums of
--                    weighted slides, 2×2 pooling through `block`) is
--                    what its chain (Spec.Model.CNN.chain, the one Main
--                    dumps and models/cnn.model elaborates to) computes:
--                    in every environment γ of the chain's scope whose
--                    bindings hold their values (ValCons: the forward
--                    run, or chain-env of item 9) and whose base
--                    variables hold inp, k₁, b₁, k₂, b₂, fc, b (at
--                    every position),
--                    the binding r (v₂ of the scope) is at every
--                    position forward inp k₁ b₁ k₂ b₂ fc b.  No law
--                    needed: it holds for every `Scalar`, Float
--                    included (Spec.Proofs.CNN; `Main check-forward`
--                    still runs both in Float as a test).
--    forward-via-≗   the network with each layer passed once through a
--                    `keep` that is the identity at every position is
--                    forward (Spec.Proofs.CNN.Via); memo-≗: tabulating
--                    is such a keep (Spec.Array.Memo), the one `Main
--                    check-forward` runs so that each layer is computed
--                    once.
--    cnn-run         the hypotheses hold for the chain's forward run
--                    from those base values (run, Spec.Proofs.Chain.
--                    Inline: each binding its value, each placeholder 0);
--                    chain-env (item 9) meets the hypotheses too: ValCons
--                    by chain-env-values, the base values pointwise by
--                    chain-env-base; that instance is not spelled out
--                    (its type check did not finish in 10 minutes).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Theorems (𝕊 : Scalar) where

open import Data.Product using (_,_; _×_; proj₂)
open import Relation.Binary.PropositionalEquality using (_≡_; _≗_)
open Scalar 𝕊 using (_+_; R)

open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.Opt using (opt; opt*; optimise)
open import Spec.Proofs.Val 𝕊 using (Same)
import Spec.Proofs.Ren 𝕊 as Ren
import Spec.Proofs.Sub 𝕊 as Sub
import Spec.Proofs.Opt 𝕊 as Opt
import Spec.Proofs.AD 𝕊 as AD
import Spec.Proofs.Forward.Subst 𝕊 as FS
open import Spec.Proofs.Sub 𝕊 using (EnvSub)
open import Spec.Proofs.Ren 𝕊 using (EnvRen)
open import Spec.Lang.AD using (EnvE; ∇; ∇₀)
open import Spec.Proofs.Forward 𝕊 using (TEnv; D⟦_⟧; tlookup)
open import Spec.Array.Base using (S)
open Ren using (drop; swap-env)
open Sub using (insert)
open import Data.List using (_++_)
open import Spec.Array.Base using (P; Ar)
open import Spec.Lang.AD using (lookupE)
open import Spec.Lang.Chain using (Chain; chain-grads)
open import Spec.Proofs.Chain.Typed using (here; baseCtx; baseNames; base-env; seed-env; binding-grads; env-grads)
import Spec.Proofs.Chain.Typed as CT
open import Spec.Proofs.Chain.Inline 𝕊 using (ctan; PF; clean; emb; inl; ValCons; base-env₀; run)
open import Data.String using (String)
open import Spec.Front.Term using (Tm; ⌊_⌋)
open import Spec.Front.Result using (Result; ok)
open import Spec.Front.Check using (infer)
open import Spec.Front.Sorts using (Sorts)
open import Spec.Front.Model using (Elaborated; elaborate; erase-chain)
open import Data.Maybe using (Is-just; nothing)
open import Relation.Nullary using (¬_)
open import Spec.Lang.Chain.Clean using (pf?)
import Spec.Proofs.Chain.Clean as Clean
open import Spec.Front.Properties using (_returns_)
import Spec.Front.Properties as Front
open import Spec.Lang.Chain using (opt-gradient; chain-grads-opt)
open import Spec.Lang.AD.Sparse using (Sparse; dense; len; ∇ˢ)
open import Spec.Lang.Chain.Sparse using (chain-grads-optˢ)
open import Spec.Proofs.AD.Sparse using (∇ˢ-dense)
open import Spec.Proofs.Chain.Sparse using (chain-grads-optˢ-≡)
open import Spec.Lang.AD using (env-map)
open import Data.List using (map)
open import Spec.Proofs.Chain.Local 𝕊 using (Pred; Only; Agree; AllOnly)
import Spec.Proofs.Chain.Local 𝕊 as Local
open import Spec.Model.PF using (cnn-pf; dot-pf; chain-pf; ops-pf)
import Spec.Model.CNN as CNN
import Spec.Front.Examples as Examples
open Examples using (cnn-text; chain-of)
open import Data.Maybe using (just)
import Spec.Model.Dot as Dot
import Spec.Model.ChainExample as ChainExample
import Spec.Model.Ops as Ops
import Spec.CNN.Array 𝕊 as Arr
import Spec.Proofs.CNN 𝕊 as CNNP
import Spec.Proofs.CNN.Via 𝕊 as ViaP
import Spec.Array.Memo as Memo
open Memo using (memo)
open import Data.Unit using (tt)
open import Spec.Scalar.Dual using (Dual)
import Spec.Lang.Eval (Dual 𝕊) as 𝔻   -- ⟦_⟧ over the dual numbers
import Spec.Proofs.Dual 𝕊 as DualP
open DualP using (dual-env)

private
  variable
    Γ Δ   : Ctx
    is ip : IS
    s     : S

------------------------------------------------------------------------
-- Renaming

eval-ren : (ρ : Ren Γ Δ) {γ : Env Δ} {δ : Env Γ}
         → (∀ {is} (x : is ∈ Γ) → Same is (lookup (ρ x) γ) (lookup x δ))
         → (e : E Γ is) → Same is (⟦ ren ρ e ⟧ γ) (⟦ e ⟧ δ)
eval-ren = Ren.eval-ren

eval-↑ : (e : E Γ is) (γ : Env Γ) (a : Val ip)
       → Same is (⟦ ↑_ {ip = ip} e ⟧ (γ , a)) (⟦ e ⟧ γ)
eval-↑ = Ren.eval-↑

eval-wk : (v : is ∈ Γ) (e : E (Γ / v) ip) (γ : Env Γ)
        → Same ip (⟦ wk v e ⟧ γ) (⟦ e ⟧ (drop v γ))
eval-wk = Ren.eval-wk

eval-ctx-swap : (x : is ∈ Γ) (e : E Γ ip) (γ : Env Γ)
              → Same ip (⟦ ctx-swap x e ⟧ (swap-env x γ)) (⟦ e ⟧ γ)
eval-ctx-swap = Ren.eval-ctx-swap

------------------------------------------------------------------------
-- Substitution

eval-sub : (σ : Sub Γ Δ) {γ : Env Δ} {δ : Env Γ}
         → (∀ {is} (x : is ∈ Γ) → Same is (⟦ σ x ⟧ γ) (lookup x δ))
         → (e : E Γ is) → Same is (⟦ subst σ e ⟧ γ) (⟦ e ⟧ δ)
eval-sub = Sub.eval-sub

eval-sub₁ : (v : is ∈ Γ) (e : E Γ ip) (e₁ : E (Γ / v) is) (γ : Env (Γ / v))
          → Same ip (⟦ sub v e e₁ ⟧ γ) (⟦ e ⟧ (insert v γ (⟦ e₁ ⟧ γ)))
eval-sub₁ = Sub.eval-sub₁

------------------------------------------------------------------------
-- The optimiser

module _ (laws : Laws 𝕊) where

  opt-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt e ⟧ ρ) (⟦ e ⟧ ρ)
  opt-sound = Opt.opt-sound laws

  opt*-sound : ∀ n (e : E Γ is) (ρ : Env Γ) → Same is (⟦ opt* n e ⟧ ρ) (⟦ e ⟧ ρ)
  opt*-sound = Opt.opt*-sound laws

  optimise-sound : (e : E Γ is) (ρ : Env Γ) → Same is (⟦ optimise e ⟧ ρ) (⟦ e ⟧ ρ)
  optimise-sound = Opt.optimise-sound laws

------------------------------------------------------------------------
-- Reverse mode

module _ (laws : Laws 𝕊) where
  open import Spec.Proofs.AD.Env 𝕊 laws using (⟨_,_⟩) renaming (ip to ipE)

  ∇-correct : (e sd : E Δ (ar s)) (δ : EnvE Δ Δ) (ρ : Env Δ) (v : TEnv Δ)
            → ipE Δ (∇ e sd δ) ρ v ≡ ipE Δ δ ρ v + ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
  ∇-correct = AD.∇-correct laws

  ∇₀-correct : (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
             → ipE Δ (∇₀ e sd) ρ v ≡ ⟨ ⟦ sd ⟧ ρ , D⟦ e ⟧ ρ v ⟩
  ∇₀-correct = AD.∇₀-correct laws

------------------------------------------------------------------------
-- The forward derivative under renaming and substitution

D-ren : (ρ : Ren Γ Δ) {γ : Env Δ} {δ : Env Γ} {w : TEnv Δ} {t : TEnv Γ}
      → EnvRen ρ γ δ
      → (∀ {s} (x : ar s ∈ Γ) → ∀ i → tlookup w (ρ x) i ≡ tlookup {Γ} t x i)
      → (e : E Γ (ar s)) → ∀ i → D⟦ ren ρ e ⟧ γ w i ≡ D⟦ e ⟧ δ t i
D-ren = FS.D-ren

D-sub : (σ : Sub Γ Δ) {γ : Env Δ} {δ : Env Γ} {w : TEnv Δ} {t : TEnv Γ}
      → EnvSub σ γ δ
      → (∀ {s} (x : ar s ∈ Γ) → ∀ i → D⟦ σ x ⟧ γ w i ≡ tlookup {Γ} t x i)
      → (e : E Γ (ar s)) → ∀ i → D⟦ subst σ e ⟧ γ w i ≡ D⟦ e ⟧ δ t i
D-sub = FS.D-sub

------------------------------------------------------------------------
-- Let-chains

chain-grads-split : ∀ {Φ p} (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p))
                  → chain-grads c y seed
                    ≡ binding-grads c (λ x → x) (seed-env y seed) ++ env-grads (baseNames c) (base-env c y seed)
chain-grads-split = CT.chain-grads-split

module _ (laws : Laws 𝕊) where
  open import Spec.Proofs.AD.Env 𝕊 laws using (⟨_,_⟩) renaming (ip to ipE)
  import Spec.Proofs.Chain 𝕊 laws as CH
  open CH using (Consistent)

  chain-adjoint : ∀ {Φ p} (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p)) (γ : Env Φ) (v : TEnv (baseCtx c))
                → Consistent c here γ (seed-env y seed)
                → ipE (baseCtx c) (base-env c y seed) γ v ≡ ⟨ ⟦ seed ⟧ γ , tlookup (ctan c γ v) y ⟩
  chain-adjoint = CH.chain-adjoint

  chain-∇-correct : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (seed : E Φ (ar p))
                    (s₀ : E (baseCtx c) (ar p)) (γ : Env Φ)
                  → ValCons c γ → Consistent c here γ (seed-env (emb c y) seed)
                  → (∀ i → ⟦ s₀ ⟧ (base-env₀ c γ) i ≡ ⟦ seed ⟧ γ i)
                  → (x : ar s ∈ baseCtx c) (i : P s)
                  → ⟦ lookupE {baseCtx c} (base-env c (emb c y) seed) x ⟧ γ i
                    ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) s₀) x ⟧ (base-env₀ c γ) i
  chain-∇-correct = CH.chain-∇-correct

------------------------------------------------------------------------
-- The reverse pass Main runs (item 10's dump-sparse; no law): the list
-- computed with the sparse environment is chain-grads-opt

∇-sparse : ∀ {Δ is} (e sd : E Δ is) (t : Sparse Δ) → dense Δ (∇ˢ (len Δ) e sd t) ≡ ∇ e sd (dense Δ t)
∇-sparse = ∇ˢ-dense

dump-sparse : ∀ {Δ p} (c : Chain (Δ ▹ ar p ▹ ar p)) (seed : E (Δ ▹ ar p ▹ ar p) (ar p))
            → chain-grads-optˢ c seed ≡ chain-grads-opt c seed
dump-sparse = chain-grads-optˢ-≡

------------------------------------------------------------------------
-- The model language

infer-faithful : ∀ (Γ : Ctx) (σ : Sorts Γ) (t : Tm) {is} {e : E Γ is} → infer Γ σ t returns (is , e) → ⌊ e ⌋ ≡ t
infer-faithful = Front.infer-faithful

elaborate-faithful : ∀ (text : String) (m : Elaborated) → elaborate text ≡ ok m
                   → erase-chain (Elaborated.chain m) ≡ Elaborated.core m
elaborate-faithful = Front.elaborate-faithful

cnn-elaborates : chain-of (elaborate cnn-text) ≡ just (_ , CNN.chain)
cnn-elaborates = Examples.cnn-elaborates

elaborated-pf : (m : Elaborated) → PF (Elaborated.chain m)
elaborated-pf = Elaborated.pf

pf?-complete : ∀ {Δ} (c : Chain Δ) → PF c → Is-just (pf? c)
pf?-complete = Clean.pf?-complete

pf?-nothing : ∀ {Δ} (c : Chain Δ) → pf? c ≡ nothing → ¬ PF c
pf?-nothing = Clean.pf?-nothing

------------------------------------------------------------------------
-- Locality

eval-only : {A : Pred Γ} {γ γ′ : Env Γ} → Agree A γ γ′
          → (e : E Γ is) → Only A e → Same is (⟦ e ⟧ γ) (⟦ e ⟧ γ′)
eval-only = Local.eval-only

∇-only : {A : Pred Δ} (e sd : E Δ (ar s)) (δ : EnvE Δ Δ)
       → Only A e → Only A sd → AllOnly Δ A δ → AllOnly Δ A (∇ e sd δ)
∇-only = Local.∇-only

------------------------------------------------------------------------
-- The environment of the generated code, and the dump

module _ (laws : Laws 𝕊) where
  open import Spec.Proofs.AD.Env 𝕊 laws using (⟨_,_⟩) renaming (ip to ipE)
  import Spec.Proofs.Chain 𝕊 laws as CH
  open CH using (Consistent)
  import Spec.Proofs.Chain.Build 𝕊 laws as CB
  open CB using (chain-env)
  import Spec.Proofs.Chain.Dump 𝕊 laws as CD
  open CD using (top; DumpCorrect)
  import Spec.Proofs.Chain.Models 𝕊 laws as CM

  chain-env-consistent : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
                           (γ₀ : Env (baseCtx c))
                         → Consistent c here (chain-env c (emb c y) (ren (emb c) s′) γ₀)
                                             (seed-env (emb c y) (ren (emb c) s′))
  chain-env-consistent = CB.chain-env-consistent

  chain-env-values : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
                       (γ₀ : Env (baseCtx c))
                     → ValCons c (chain-env c (emb c y) (ren (emb c) s′) γ₀)
  chain-env-values = CB.chain-env-values

  chain-env-base : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
                     (γ₀ : Env (baseCtx c))
                   → ∀ {is} (x : is ∈ baseCtx c)
                   → Same is (lookup x (base-env₀ c (chain-env c (emb c y) (ren (emb c) s′) γ₀))) (lookup x γ₀)
  chain-env-base = CB.chain-env-base

  chain-values : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
                   (γ₀ : Env (baseCtx c))
                 → ∀ {s} (x : ar s ∈ baseCtx c) (i : P s)
                 → ⟦ lookupE {baseCtx c} (base-env c (emb c y) (ren (emb c) s′)) x ⟧
                     (chain-env c (emb c y) (ren (emb c) s′) γ₀) i
                   ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) (subst (inl c pf) s′)) x ⟧ γ₀ i
  chain-values = CD.chain-values

  dump-grads : ∀ {Φ p} (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p))
             → map opt-gradient (chain-grads c y seed)
               ≡ map opt-gradient (binding-grads c (λ x → x) (seed-env y seed))
                 ++ env-grads (baseNames c) (env-map {Γ = baseCtx c} optimise (base-env c y seed))
  dump-grads = CD.dump-grads

  dump-values : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
                  (γ₀ : Env (baseCtx c))
                → ∀ {s} (x : ar s ∈ baseCtx c) (i : P s)
                → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c (emb c y) (ren (emb c) s′))) x ⟧
                    (chain-env c (emb c y) (ren (emb c) s′) γ₀) i
                  ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf y) (subst (inl c pf) s′)) x ⟧ γ₀ i
  dump-values = CD.dump-values

  dump-adjoint : ∀ {Φ p} (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
                   (γ₀ : Env (baseCtx c)) (v : TEnv (baseCtx c))
                 → ipE (baseCtx c) (env-map {Γ = baseCtx c} optimise (base-env c (emb c y) (ren (emb c) s′)))
                       (chain-env c (emb c y) (ren (emb c) s′) γ₀) v
                   ≡ ⟨ ⟦ subst (inl c pf) s′ ⟧ γ₀ , D⟦ inl c pf y ⟧ γ₀ v ⟩
  dump-adjoint = CD.dump-adjoint

  -- top c: the last binding (v₀ of the scope) as a clean variable.
  -- DumpCorrect c pf seed s′ is the conclusion below.
  dump-correct : ∀ {Δ p} (c : Chain (Δ ▹ ar p ▹ ar p)) (pf : PF c) (seed : E (Δ ▹ ar p ▹ ar p) (ar p))
                   (s′ : E (clean c) (ar p)) → seed ≡ ren (emb c) s′
               → (chain-grads-opt c seed
                  ≡ map opt-gradient (binding-grads c (λ x → x) (seed-env v₀ seed))
                    ++ env-grads (baseNames c) (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)))
                 × (∀ (γ₀ : Env (baseCtx c)) {s} (x : ar s ∈ baseCtx c) (i : P s)
                    → ⟦ lookupE {baseCtx c} (env-map {Γ = baseCtx c} optimise (base-env c v₀ seed)) x ⟧
                        (chain-env c v₀ seed γ₀) i
                      ≡ ⟦ lookupE {baseCtx c} (∇₀ (inl c pf (top c)) (subst (inl c pf) s′)) x ⟧ γ₀ i)
  dump-correct = CD.dump-correct

  cnn-dump : DumpCorrect CNN.chain cnn-pf CNN.seed one
  cnn-dump = CM.cnn-dump

  dot-dump : DumpCorrect Dot.chain dot-pf Dot.seed (var v₃)
  dot-dump = CM.dot-dump

  chain-dump : DumpCorrect ChainExample.chain chain-pf ChainExample.seed one
  chain-dump = CM.chain-dump

  ops-dump : DumpCorrect Ops.chain ops-pf Ops.seed one
  ops-dump = CM.ops-dump

  elaborated-dump : (m : Elaborated) → DumpCorrect (Elaborated.chain m) (Elaborated.pf m) one one
  elaborated-dump = CM.elaborated-dump

------------------------------------------------------------------------
-- Dual numbers

D-dual : (e : E Γ (ar s)) (ρ : Env Γ) (v : TEnv Γ) (i : P s)
       → 𝔻.⟦ e ⟧ (dual-env ρ v) i ≡ (⟦ e ⟧ ρ i , D⟦ e ⟧ ρ v i)
D-dual = DualP.D-dual

module _ (laws : Laws 𝕊) where
  open import Spec.Proofs.AD.Env 𝕊 laws using (⟨_,_⟩) renaming (ip to ipE)

  ∇₀-dual : (e sd : E Δ (ar s)) (ρ : Env Δ) (v : TEnv Δ)
          → ipE Δ (∇₀ e sd) ρ v ≡ ⟨ ⟦ sd ⟧ ρ , (λ i → proj₂ (𝔻.⟦ e ⟧ (dual-env ρ v) i)) ⟩
  ∇₀-dual = DualP.∇₀-dual laws

------------------------------------------------------------------------
-- The paper's network: arrays and chain agree

cnn-forward : ∀ inp k₁ b₁ k₂ b₂ fc b (γ : Env CNN.Φ) → ValCons CNN.chain γ
            → let γ₀ = base-env₀ CNN.chain γ in
              (∀ i → lookup v₆ γ₀ i ≡ inp i) → (∀ i → lookup v₅ γ₀ i ≡ k₁ i)
            → (∀ i → lookup v₄ γ₀ i ≡ b₁ i) → (∀ i → lookup v₃ γ₀ i ≡ k₂ i)
            → (∀ i → lookup v₂ γ₀ i ≡ b₂ i) → (∀ i → lookup v₁ γ₀ i ≡ fc i)
            → (∀ i → lookup v₀ γ₀ i ≡ b i)
            → ∀ i → lookup v₂ γ i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
cnn-forward = CNNP.cnn-forward

-- the hypotheses hold for the chain's forward run (run, which also
-- starts chain-env)
cnn-run : ∀ target inp k₁ b₁ k₂ b₂ fc b
        → let γ₀ = ((((((((tt , target) , inp) , k₁) , b₁) , k₂) , b₂) , fc) , b) in
          ∀ i → lookup v₂ (run CNN.chain γ₀) i ≡ Arr.forward inp k₁ b₁ k₂ b₂ fc b i
cnn-run = CNNP.cnn-run

-- the network with each layer passed once through a keep that is the
-- identity at every position (Main check-forward's: memo, memo-≗) is
-- forward
forward-via-≗ : (keep : ∀ {s} → Ar s R → Ar s R) (kept : ∀ {s} (a : Ar s R) → keep a ≗ a)
  → ∀ inp k₁ b₁ k₂ b₂ fc b
  → Arr.forward-via keep inp k₁ b₁ k₂ b₂ fc b ≗ Arr.forward inp k₁ b₁ k₂ b₂ fc b
forward-via-≗ = ViaP.forward-via-≗

memo-≗ : {X : Set} (a : Ar s X) → memo a ≗ a
memo-≗ = Memo.memo-≗
