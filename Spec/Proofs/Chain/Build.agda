{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The environment the generated code computes, built and proved
-- Consistent and ValCons (the hypotheses of chain-∇-correct).
--
-- Given the values of the base variables (γ₀), `chain-env` runs a
-- chain as the generated code does:
--   1. the forward bindings, first to last (`run`: each binding gets
--      the value of its expression, each placeholder d_x zero);
--   2. the gradient entries of the bindings, last to first (`fill`):
--      d_x is set to the value, in the environment built so far, of
--      the entry chain-grads emits for x, optimised (what the dump
--      prints for d_x; optimise-sound: the same value as unoptimised).
--
-- Why this is consistent: the entry for x only reads variables that
-- are not placeholders of x or of bindings before x (`NotPh`), and
-- filling only changes those, so the entry has the same value in the
-- final environment.  That the entry reads no such placeholder is the
-- locality of reverse mode (Spec.Proofs.Chain.Local.∇-only): the
-- entry is built from the seed, the bindings after x (placeholder-free
-- by PF) and their placeholders d_z, z after x.  The bindings keep the
-- values of step 1, and a binding reads no placeholder, so ValCons
-- holds too.  Hypotheses: PF, and a seed that reads no placeholder
-- (a renaming `ren (emb c) s′` of an expression over the clean scope).
------------------------------------------------------------------------
open import Spec.Scalar using (Scalar)
open import Spec.Scalar.Laws using (Laws)

module Spec.Proofs.Chain.Build (𝕊 : Scalar) (laws : Laws 𝕊) where

open import Data.Empty using (⊥)
open import Data.Product using (_×_; _,_; proj₁; proj₂)
open import Data.Unit using (⊤; tt)
open import Relation.Binary.PropositionalEquality hiding (subst)

open import Spec.Array.Base using (S; P; K)
open import Data.Nat using (ℕ; zero; suc)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.Eval 𝕊
open import Spec.Lang.AD using (EnvE; lookupE; ∇; env-zero)
open import Spec.Lang.Chain using (Chain; ε; _▹_)
open import Spec.Lang.Opt using (optimise)
open import Spec.Proofs.Opt 𝕊 using (optimise-sound)
open import Spec.Proofs.Chain.Typed using (_⊑_; here; there; wkw; step; seed-env; baseCtx)
open import Spec.Proofs.Chain.Inline 𝕊 using (PF; clean; emb; ValCons; base-env₀; run; run-values; run-base)
open import Spec.Proofs.Chain 𝕊 laws using (Consistent)
open import Spec.Proofs.Chain.Local 𝕊
open import Spec.Proofs.Val 𝕊 using (Same; Same-refl; Same-trans; ≡⇒Same)

open Scalar 𝕊 using (0#)

private
  variable
    Γ Δ Φ Ψ : Ctx
    is ip   : IS
    p       : S

------------------------------------------------------------------------
-- Distinct variables, and renamings that keep them distinct

-- (by their indices: v₀ ≠v vₛ y and vₛ x ≠v vₛ y = x ≠v y hold by computation)
Neq : ℕ → ℕ → Set
Neq zero    zero    = ⊥
Neq zero    (suc _) = ⊤
Neq (suc _) zero    = ⊤
Neq (suc m) (suc n) = Neq m n

_≠v_ : is ∈ Γ → ip ∈ Γ → Set
x ≠v y = Neq (idx x) (idx y)

Keeps : Ren Γ Δ → Set
Keeps {Γ} ρ = ∀ {is ip} {x : is ∈ Γ} {y : ip ∈ Γ} → x ≠v y → ρ x ≠v ρ y

wkw-keeps : (w : Δ ⊑ Φ) → Keeps (wkw w)
wkw-keeps here      ne = ne
wkw-keeps (there w) ne = wkw-keeps w ne

------------------------------------------------------------------------
-- Setting one variable of an environment

set : is ∈ Γ → Val is → Env Γ → Env Γ
set {Γ = _ ▹ _} (var# zero refl)  a (γ , _) = γ , a
set {Γ = Γ ▹ _} (var# (suc n) p) a (γ , b) = set {Γ = Γ} (var# n p) a γ , b

lookup-set : (x : is ∈ Γ) (a : Val is) (γ : Env Γ) → lookup x (set x a γ) ≡ a
lookup-set {Γ = _ ▹ _} (var# zero refl)  a (γ , _) = refl
lookup-set {Γ = Γ ▹ _} (var# (suc n) p) a (γ , _) = lookup-set {Γ = Γ} (var# n p) a γ

lookup-set-≠ : (y : ip ∈ Γ) (x : is ∈ Γ) (a : Val is) (γ : Env Γ) → y ≠v x
             → lookup y (set x a γ) ≡ lookup y γ
lookup-set-≠ {Γ = _ ▹ _} (var# zero refl)  (var# zero refl)  a (γ , _) ()
lookup-set-≠ {Γ = _ ▹ _} (var# zero refl)  (var# (suc n) p) a (γ , _) ne = refl
lookup-set-≠ {Γ = _ ▹ _} (var# (suc m) q) (var# zero refl)  a (γ , _) ne = refl
lookup-set-≠ {Γ = Γ ▹ _} (var# (suc m) q) (var# (suc n) p) a (γ , _) ne =
  lookup-set-≠ {Γ = Γ} (var# m q) (var# n p) a γ ne

------------------------------------------------------------------------
-- Not a placeholder of the chain

-- `NotPh c ρ x`: x is none of the placeholders d_ of c (c's scope put
-- into the full scope by ρ).
NotPh : Chain Δ → Ren Δ Φ → Pred Φ
NotPh (ε _)   ρ x = ⊤
NotPh (c ▹ _) ρ x = x ≠v ρ v₁ × NotPh c (λ z → ρ (vₛ (vₛ z))) x

-- a variable distinct from everything in ρ's image
NotPh-out : (c : Chain Δ) (ρ : Ren Δ Φ) (x : is ∈ Φ)
          → (∀ {ip} (y : ip ∈ Δ) → x ≠v ρ y) → NotPh c ρ x
NotPh-out (ε _)   ρ x h = tt
NotPh-out (c ▹ _) ρ x h = h v₁ , NotPh-out c (λ z → ρ (vₛ (vₛ z))) x (λ y → h (vₛ (vₛ y)))

-- along a renaming that keeps variables distinct
NotPh-map : (c : Chain Δ) (ρ : Ren Δ Φ) (σ : Ren Φ Ψ) → Keeps σ
          → {x : is ∈ Φ} → NotPh c ρ x → NotPh c (λ z → σ (ρ z)) (σ x)
NotPh-map (ε _)   ρ σ hσ h        = tt
NotPh-map (c ▹ _) ρ σ hσ (ne , h) = hσ ne , NotPh-map c (λ z → ρ (vₛ (vₛ z))) σ hσ h

-- the bindings and base variables (the clean scope) are not placeholders
NotPh-emb : (c : Chain Δ) (ρ : Ren Δ Φ) → Keeps ρ → (z : is ∈ clean c) → NotPh c ρ (ρ (emb c z))
NotPh-emb (ε _)   ρ hρ z      = tt
NotPh-emb (c ▹ _) ρ hρ (var# zero refl) =
  hρ {x = v₀} {y = v₁} tt , NotPh-out c (λ z → ρ (vₛ (vₛ z))) (ρ v₀) (λ y → hρ {x = v₀} {y = vₛ (vₛ y)} tt)
NotPh-emb (c ▹ _) ρ hρ (var# (suc n) p) =
  hρ {x = vₛ (vₛ (emb c (var# n p)))} {y = v₁} tt
  , NotPh-emb c (λ z → ρ (vₛ (vₛ z))) (λ ne → hρ ne) (var# n p)

-- the base variables of a chain in its scope
bvar : (c : Chain Δ) → Ren (baseCtx c) Δ
bvar (ε _)   x = x
bvar (c ▹ _) x = vₛ (vₛ (bvar c x))

lookup-base : (c : Chain Δ) (γ : Env Δ) (x : is ∈ baseCtx c) → lookup x (base-env₀ c γ) ≡ lookup (bvar c x) γ
lookup-base (ε _)   γ             x = refl
lookup-base (c ▹ _) ((γ , _) , _) x = lookup-base c γ x

NotPh-base : (c : Chain Δ) (ρ : Ren Δ Φ) → Keeps ρ → (x : is ∈ baseCtx c) → NotPh c ρ (ρ (bvar c x))
NotPh-base (ε _)   ρ hρ x = tt
NotPh-base (c ▹ _) ρ hρ x =
  hρ {x = vₛ (vₛ (bvar c x))} {y = v₁} tt , NotPh-base c (λ z → ρ (vₛ (vₛ z))) (λ ne → hρ ne) x

-- a binding of a placeholder-free chain reads no placeholder
Only-emb : (c : Chain Δ) (ρ : Ren Δ Φ) → Keeps ρ → (e′ : E (clean c) is)
         → Only (λ x → NotPh c ρ (ρ x)) (ren (emb c) e′)
Only-emb c ρ hρ e′ = Only-ren (emb c) (λ z _ → NotPh-emb c ρ hρ z) e′ (Only-all (λ _ → tt) e′)

Only-binding : (c : Chain Δ) (ρ : Ren Δ Φ) → Keeps ρ → (e′ : E (clean c) is)
             → Only (NotPh c ρ) (ren ρ (ren (emb c) e′))
Only-binding c ρ hρ e′ = Only-ren ρ (λ x h → h) (ren (emb c) e′) (Only-emb c ρ hρ e′)

------------------------------------------------------------------------
-- Step 1: the forward bindings

-- run, run-values and run-base: Spec.Proofs.Chain.Inline (no law needed)

------------------------------------------------------------------------
-- Step 2: the placeholders, last first

-- c is the part of the chain not yet processed (its scope is put into
-- the full scope by w), δ the gradient environment the reverse pass
-- holds at that point.
fill : Chain Δ → Δ ⊑ Φ → Env Φ → EnvE Φ Φ → Env Φ
fill (ε _)         w γ δ = γ
fill (c ▹ (_ , e)) w γ δ =
  fill c (there w) (set (wkw w v₁) (⟦ optimise (lookupE δ (wkw w v₀)) ⟧ γ) γ) (step (wkw w) e δ)

-- filling changes placeholders of c only
fill-agree : (c : Chain Δ) (w : Δ ⊑ Φ) (γ : Env Φ) (δ : EnvE Φ Φ)
           → Agree (NotPh c (wkw w)) (fill c w γ δ) γ
fill-agree (ε _)         w γ δ {is} x _ = Same-refl is (lookup x γ)
fill-agree (c ▹ (_ , e)) w γ δ {is} x (ne , h) =
  Same-trans is (fill-agree c (there w) γ₁ (step (wkw w) e δ) x h)
                (≡⇒Same is (lookup-set-≠ x (wkw w v₁) a γ ne))
  where
    a  = ⟦ optimise (lookupE δ (wkw w v₀)) ⟧ γ
    γ₁ = set (wkw w v₁) a γ

-- the entries of δ read no placeholder of c: then fill is consistent
fill-consistent : (c : Chain Δ) → PF c → (w : Δ ⊑ Φ) (γ : Env Φ) (δ : EnvE Φ Φ)
                → AllOnly Φ (NotPh c (wkw w)) δ → Consistent c w (fill c w γ δ) δ
fill-consistent (ε _) _ w γ δ oδ = tt
fill-consistent {Φ = Φ} (c ▹ (n , e)) (pf , (e′ , refl)) w γ δ oδ =
  this , fill-consistent c pf (there w) γ₁ δ′ oδ′
  where
    d  = wkw w v₁
    a  = ⟦ optimise (lookupE δ (wkw w v₀)) ⟧ γ
    γ₁ = set d a γ
    δ′ = step (wkw w) (ren (emb c) e′) δ
    γ* = fill c (there w) γ₁ δ′

    -- d_x is not a placeholder of the bindings before x
    od : NotPh c (wkw (there w)) d
    od = NotPh-out c (wkw (there w)) d (λ y → wkw-keeps w {x = v₁} {y = vₛ (vₛ y)} tt)

    oδ′ : AllOnly Φ (NotPh c (wkw (there w))) δ′
    oδ′ = ∇-only (ren (wkw (there w)) (ren (emb c) e′)) (var d) δ
                 (Only-binding c (wkw (there w)) (wkw-keeps (there w)) e′) od
                 (AllOnly-mono {Γ = Φ} (λ x h → proj₂ h) δ oδ)

    this : ∀ i → ⟦ lookupE δ (wkw w v₀) ⟧ γ* i ≡ lookup d γ* i
    this i = trans (eval-only (fill-agree (c ▹ (n , ren (emb c) e′)) w γ δ)
                              (lookupE δ (wkw w v₀)) (AllOnly-lookup {Γ = Φ} δ oδ (wkw w v₀)) i)
                   (trans (sym (optimise-sound laws (lookupE δ (wkw w v₀)) γ i))
                   (trans (cong (λ f → f i) (sym (lookup-set d a γ)))
                          (sym (fill-agree c (there w) γ₁ δ′ d od i))))

------------------------------------------------------------------------
-- The bindings keep their values

values-agree : (c : Chain Δ) → PF c → (γ γ′ : Env Δ)
             → Agree (NotPh c (λ x → x)) γ γ′ → ValCons c γ′ → ValCons c γ
values-agree (ε _) _ γ γ′ ag vc = tt
values-agree (c ▹ (n , e)) (pf , (e′ , refl)) ((γ , d) , a) ((γ′ , d′) , a′) ag (va , vc) =
  val , values-agree c pf γ γ′ ag′ vc
  where
    ag′ : Agree (NotPh c (λ x → x)) γ γ′
    ag′ x h = ag (vₛ (vₛ x)) (tt , NotPh-map c (λ z → z) (λ z → vₛ (vₛ z)) (λ ne → ne) h)
    val : ∀ i → a i ≡ ⟦ ren (emb c) e′ ⟧ γ i
    val i = trans (ag v₀ (tt , NotPh-out c (λ z → vₛ (vₛ z)) v₀ (λ y → tt)) i)
                  (trans (va i)
                         (sym (eval-only ag′ (ren (emb c) e′)
                                 (Only-emb c (λ x → x) (λ ne → ne) e′) i)))

------------------------------------------------------------------------
-- The environment of the generated code

chain-env : (c : Chain Φ) → ar p ∈ Φ → E Φ (ar p) → Env (baseCtx c) → Env Φ
chain-env c y seed γ₀ = fill c here (run c γ₀) (seed-env y seed)

module _ (c : Chain Φ) (pf : PF c) (y : ar p ∈ clean c) (s′ : E (clean c) (ar p))
         (γ₀ : Env (baseCtx c)) where

  private
    seed = ren (emb c) s′
    γ    = chain-env c (emb c y) seed γ₀

  chain-env-consistent : Consistent c here γ (seed-env (emb c y) seed)
  chain-env-consistent =
    fill-consistent c pf here (run c γ₀) (seed-env (emb c y) seed)
      (∇-only (var (emb c y)) seed (env-zero {Φ})
              (NotPh-emb c (λ x → x) (λ ne → ne) y)
              (Only-emb c (λ x → x) (λ ne → ne) s′)
              (AllOnly-zero {Γ = Φ}))

  chain-env-values : ValCons c γ
  chain-env-values =
    values-agree c pf γ (run c γ₀) (fill-agree c here (run c γ₀) (seed-env (emb c y) seed)) (run-values c γ₀)

  chain-env-base : ∀ {is} (x : is ∈ baseCtx c) → Same is (lookup x (base-env₀ c γ)) (lookup x γ₀)
  chain-env-base {is} x =
    Same-trans is (≡⇒Same is (lookup-base c γ x))
      (Same-trans is (fill-agree c here (run c γ₀) (seed-env (emb c y) seed) (bvar c x)
                       (NotPh-base c (λ z → z) (λ ne → ne) x))
        (≡⇒Same is (trans (sym (lookup-base c (run c γ₀) x)) (cong (lookup x) (run-base c γ₀)))))
