{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- A typed reading of the reverse pass over a let-chain
-- (Spec.Lang.Chain.chain-grads), for stating its correctness in
-- Spec.Proofs.Chain.
--
-- `Δ ⊑ Φ`: the full scope Φ is Δ followed by zero or more bindings
-- (each a placeholder d_x then x); `wkw` is the matching renaming.
-- `final c ρ δ` is the gradient environment left after the reverse
-- pass has processed every binding of c (the one chain-grads reads
-- the base gradients from), and `base-env c y seed` those base
-- gradients as an `EnvE` over the base context, i.e. one typed entry
-- per base array variable.  `chain-grads-split` shows chain-grads is
-- exactly the binding entries followed by the entries of base-env.
------------------------------------------------------------------------
module Spec.Proofs.Chain.Typed where

open import Data.List using (List; []; _∷_; _++_; [_]; map)
open import Data.Product using (_×_; _,_)
open import Data.Unit using (tt)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂; trans)

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.AD using (EnvE; env-zero; lookupE; ∇; ∇₀)
open import Spec.Lang.Chain
open import Spec.Lang.Shift using (Offset; shift; off₀; off₁; off₂)
open import Spec.Proofs.Shift using (_≗ᵣ_; ren-cong; shift-vₛ; shift-vₛvₛ; shift-0)
import Spec.Model.ChainExample

private
  variable
    Γ Δ Φ Ψ : Ctx
    is    : IS
    p s   : S

------------------------------------------------------------------------
-- Scopes inside the full scope

infix 4 _⊑_

data _⊑_ : Ctx → Ctx → Set where
  here  : Φ ⊑ Φ
  there : (Δ ▹ ar p ▹ ar p) ⊑ Φ → Δ ⊑ Φ

wkw : Δ ⊑ Φ → Ren Δ Φ
wkw here      x = x
wkw (there w) x = wkw w (vₛ (vₛ x))

------------------------------------------------------------------------
-- The base context of a chain

baseCtx : Chain Δ → Ctx
baseCtx (ε {Γ} _) = Γ
baseCtx (c ▹ _)   = baseCtx c

baseNames : (c : Chain Δ) → Names (baseCtx c)
baseNames (ε ns)  = ns
baseNames (c ▹ _) = baseNames c

baseW : (c : Chain Δ) → Δ ⊑ Φ → baseCtx c ⊑ Φ
baseW (ε _)   w = w
baseW (c ▹ _) w = baseW c (there w)

------------------------------------------------------------------------
-- The reverse pass, typed

-- the entries of δ at the variables ρ x, x in Γ
pullE : Ren Γ Ψ → EnvE Ψ Φ → EnvE Γ Φ
pullE {ε}        ρ δ = tt
pullE {Γ ▹ ar s} ρ δ = pullE {Γ} (λ x → ρ (vₛ x)) δ , lookupE δ (ρ v₀)
pullE {Γ ▹ ix s} ρ δ = pullE {Γ} (λ x → ρ (vₛ x)) δ

-- the step of chain-grads for one binding x = e: add ∇ e with seed d_x
step : Ren (Δ ▹ ar p ▹ ar p) Φ → E Δ (ar p) → EnvE Φ Φ → EnvE Φ Φ
step ρ e δ = ∇ (ren (λ x → ρ (vₛ (vₛ x))) e) (var (ρ v₁)) δ

-- the gradient environment after every binding of c
final : Chain Δ → Ren Δ Φ → EnvE Φ Φ → EnvE Φ Φ
final (ε _)         ρ δ = δ
final (c ▹ (_ , e)) ρ δ = final c (λ x → ρ (vₛ (vₛ x))) (step ρ e δ)

-- the gradient entries of the bindings, last first (as in chain-grads)
binding-grads : Chain Δ → Ren Δ Φ → EnvE Φ Φ → List (Gradient Φ)
binding-grads (ε _)         ρ δ = []
binding-grads (c ▹ (x , e)) ρ δ =
  gradient (d_ x) x _ (lookupE δ (ρ v₀))
  ∷ binding-grads c (λ y → ρ (vₛ (vₛ y))) (step ρ e δ)

-- a typed gradient environment as a list of named entries
env-grads : Names Γ → EnvE Γ Φ → List (Gradient Φ)
env-grads {ε}        _        _       = []
env-grads {Γ ▹ ar s} (ns , x) (δ , e) = env-grads ns δ ++ [ gradient (d_ x) x s e ]
env-grads {Γ ▹ ix s} (ns , _) δ       = env-grads ns δ

-- the seed's gradient environment
seed-env : ar p ∈ Φ → E Φ (ar p) → EnvE Φ Φ
seed-env {Φ = Φ} y seed = ∇ (var y) seed (env-zero {Φ})

-- the gradients of the base variables, typed
base-env : (c : Chain Φ) → ar p ∈ Φ → E Φ (ar p) → EnvE (baseCtx c) Φ
base-env c y seed = pullE (wkw (baseW c here)) (final c (λ x → x) (seed-env y seed))

pullE-vₛ-ar : (ρ : Ren Γ Ψ) (δ : EnvE Ψ Φ) (e : E Φ (ar s))
            → pullE {Γ} {Ψ ▹ ar s} (λ x → vₛ (ρ x)) (δ , e) ≡ pullE ρ δ
pullE-vₛ-ar {ε}         ρ δ e = refl
pullE-vₛ-ar {Γ ▹ ar _}  ρ δ e = cong (_, lookupE δ (ρ v₀)) (pullE-vₛ-ar (λ x → ρ (vₛ x)) δ e)
pullE-vₛ-ar {Γ ▹ ix _}  ρ δ e = pullE-vₛ-ar (λ x → ρ (vₛ x)) δ e

pullE-vₛ-ix : (ρ : Ren Γ Ψ) (δ : EnvE Ψ Φ)
            → pullE {Γ} {Ψ ▹ ix s} (λ x → vₛ (ρ x)) δ ≡ pullE ρ δ
pullE-vₛ-ix {ε}         ρ δ = refl
pullE-vₛ-ix {Γ ▹ ar _}  ρ δ = cong (_, lookupE δ (ρ v₀)) (pullE-vₛ-ix (λ x → ρ (vₛ x)) δ)
pullE-vₛ-ix {Γ ▹ ix _}  ρ δ = pullE-vₛ-ix (λ x → ρ (vₛ x)) δ

pullE-id : (δ : EnvE Ψ Φ) → pullE {Ψ} (λ x → x) δ ≡ δ
pullE-id {ε}        δ       = refl
pullE-id {Ψ ▹ ar s} (δ , e) = cong (_, e) (trans (pullE-vₛ-ar {Γ = Ψ} {Ψ = Ψ} (λ x → x) δ e) (pullE-id {Ψ} δ))
pullE-id {Ψ ▹ ix s} δ       = trans (pullE-vₛ-ix {Γ = Ψ} {Ψ = Ψ} {s = s} (λ x → x) δ) (pullE-id {Ψ} δ)

------------------------------------------------------------------------
-- Agreement with chain-grads

base-grads-pullE : (ns : Names Γ) (o : Offset Γ Φ) (ρ : Ren Γ Φ) → shift o ≗ᵣ ρ → (δ : EnvE Φ Φ)
                 → base-grads ns o δ ≡ env-grads ns (pullE ρ δ)
base-grads-pullE {ε}        ns       o ρ h δ = refl
base-grads-pullE {Γ ▹ ar s} (ns , x) o ρ h δ =
  cong₂ (λ a v → a ++ [ gradient (d_ x) x s (lookupE δ v) ])
        (base-grads-pullE ns (off₁ o) (λ y → ρ (vₛ y)) (λ y → trans (shift-vₛ o y) (h (vₛ y))) δ) (h v₀)
base-grads-pullE {Γ ▹ ix s} (ns , x) o ρ h δ =
  base-grads-pullE ns (off₁ o) (λ y → ρ (vₛ y)) (λ y → trans (shift-vₛ o y) (h (vₛ y))) δ

-- (grads renames by an offset, binding-grads by composed weakenings:
-- the same variables.)
grads-split : (c : Chain Δ) (w : Δ ⊑ Φ) (o : Offset Δ Φ) → shift o ≗ᵣ wkw w → (δ : EnvE Φ Φ)
            → grads c o δ
              ≡ binding-grads c (wkw w) δ ++ env-grads (baseNames c) (pullE (wkw (baseW c w)) (final c (wkw w) δ))
grads-split (ε ns)        w o h δ = base-grads-pullE ns o (wkw w) h δ
grads-split (c ▹ (x , e)) w o h δ =
  cong₂ _∷_ (cong (λ v → gradient (d_ x) x _ (lookupE δ v)) (h v₀))
        (trans (cong (grads c (off₂ o)) (cong₂ (λ a v → ∇ a (var v) δ) (ren-cong h₂ e) (h v₁)))
               (grads-split c (there w) (off₂ o) h₂ (step (wkw w) e δ)))
  where
    h₂ : shift (off₂ o) ≗ᵣ wkw (there w)
    h₂ y = trans (shift-vₛvₛ o y) (h (vₛ (vₛ y)))

-- chain-grads is the binding entries, then the entries of base-env.
chain-grads-split : (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p))
                  → chain-grads c y seed
                    ≡ binding-grads c (λ x → x) (seed-env y seed) ++ env-grads (baseNames c) (base-env c y seed)
chain-grads-split c y seed = grads-split c here off₀ shift-0 (seed-env y seed)

------------------------------------------------------------------------
-- Checked on the paper's chain example (x = a · b, y = x · x)

private
  module CE = Spec.Model.ChainExample

  _ : baseCtx CE.chain ≡ CE.Γ
  _ = refl

  _ : map Gradient.name (binding-grads CE.chain (λ x → x) (seed-env v₀ CE.seed)) ≡ "d_y" ∷ "d_x" ∷ []
  _ = refl

  _ : map Gradient.name (env-grads {Γ = CE.Γ} (baseNames CE.chain) (base-env CE.chain v₀ CE.seed)) ≡ "d_a" ∷ "d_b" ∷ []
  _ = refl
