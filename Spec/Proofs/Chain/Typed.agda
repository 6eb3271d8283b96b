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
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; trans)

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (Ren; ren)
open import Spec.Lang.AD using (EnvE; env-zero; lookupE; ∇; ∇₀)
open import Spec.Lang.Chain
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

base-grads-pullE : (ns : Names Γ) (ρ : Ren Γ Φ) (δ : EnvE Φ Φ)
                 → base-grads ns ρ δ ≡ env-grads ns (pullE ρ δ)
base-grads-pullE {ε}        ns       ρ δ = refl
base-grads-pullE {Γ ▹ ar s} (ns , x) ρ δ =
  cong (_++ [ gradient (d_ x) x s (lookupE δ (ρ v₀)) ]) (base-grads-pullE ns (λ y → ρ (vₛ y)) δ)
base-grads-pullE {Γ ▹ ix s} (ns , x) ρ δ = base-grads-pullE ns (λ y → ρ (vₛ y)) δ

grads-split : (c : Chain Δ) (w : Δ ⊑ Φ) (δ : EnvE Φ Φ)
            → grads c (wkw w) δ
              ≡ binding-grads c (wkw w) δ ++ env-grads (baseNames c) (pullE (wkw (baseW c w)) (final c (wkw w) δ))
grads-split (ε ns)        w δ = base-grads-pullE ns (wkw w) δ
grads-split (c ▹ (x , e)) w δ =
  cong (gradient (d_ x) x _ (lookupE δ (wkw w v₀)) ∷_) (grads-split c (there w) (step (wkw w) e δ))

-- chain-grads is the binding entries, then the entries of base-env.
chain-grads-split : (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p))
                  → chain-grads c y seed
                    ≡ binding-grads c (λ x → x) (seed-env y seed) ++ env-grads (baseNames c) (base-env c y seed)
chain-grads-split c y seed = grads-split c here (seed-env y seed)

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
