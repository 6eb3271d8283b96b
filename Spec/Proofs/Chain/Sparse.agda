{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The chain's sparse reverse pass is its reverse pass:
-- chain-gradsˢ c y seed ≡ chain-grads c y seed, so the list Main
-- prints (chain-grads-optˢ) is chain-grads-opt, of which dump-correct
-- speaks.  Step by step: gradsˢ on a sparse environment t is grads on
-- dense Φ t (lookup-dense for the entries read, ∇ˢ-dense for the
-- gradient added), from the seed's environment on leaf (env-zero).
------------------------------------------------------------------------
module Spec.Proofs.Chain.Sparse where

open import Data.List using (_∷_; _++_; [_]; map)
open import Data.Product using (_,_)
open import Relation.Binary.PropositionalEquality hiding ([_])

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (ren)
open import Spec.Lang.Shift using (Offset; shift; off₀; off₁; off₂)
open import Spec.Lang.AD using (∇)
open import Spec.Lang.AD.Sparse using (Sparse; leaf; len; dense; ∇ˢ)
open import Spec.Lang.Chain
open import Spec.Lang.Chain.Sparse
open import Spec.Proofs.AD.Sparse using (lookup-dense; dense-leaf; ∇ˢ-dense)

private
  variable
    Δ Φ : Ctx
    p   : S

base-gradsˢ-dense : (ns : Names Δ) (o : Offset Δ Φ) (t : Sparse Φ)
                  → base-gradsˢ (len Φ) ns o t ≡ base-grads ns o (dense Φ t)
base-gradsˢ-dense {ε}        _        o t = refl
base-gradsˢ-dense {Δ ▹ ar s} {Φ} (ns , x) o t =
  cong₂ (λ a e → a ++ [ gradient (d_ x) x s e ])
        (base-gradsˢ-dense ns (off₁ o) t) (lookup-dense Φ (shift o v₀) t)
base-gradsˢ-dense {Δ ▹ ix _} (ns , _) o t = base-gradsˢ-dense ns (off₁ o) t

gradsˢ-dense : (c : Chain Δ) (o : Offset Δ Φ) (t : Sparse Φ)
             → gradsˢ (len Φ) c o t ≡ grads c o (dense Φ t)
gradsˢ-dense (ε ns)                     o t = base-gradsˢ-dense ns o t
gradsˢ-dense {Φ = Φ} (_▹_ {p = q} c (x , e)) o t =
  cong₂ _∷_ (cong (gradient (d_ x) x q) (lookup-dense Φ (shift o v₀) t))
            (trans (gradsˢ-dense c (off₂ o) _)
                   (cong (grads c (off₂ o)) (∇ˢ-dense (ren (shift (off₂ o)) e) (var (shift o v₁)) t)))

chain-gradsˢ-≡ : (c : Chain Φ) (y : ar p ∈ Φ) (seed : E Φ (ar p))
               → chain-gradsˢ c y seed ≡ chain-grads c y seed
chain-gradsˢ-≡ {Φ = Φ} c y seed =
  trans (gradsˢ-dense c off₀ _)
        (cong (grads c off₀) (trans (∇ˢ-dense (var y) seed leaf) (cong (∇ (var y) seed) (dense-leaf Φ))))

chain-grads-optˢ-≡ : ∀ {Δ} (c : Chain (Δ ▹ ar p ▹ ar p)) (seed : E (Δ ▹ ar p ▹ ar p) (ar p))
                   → chain-grads-optˢ c seed ≡ chain-grads-opt c seed
chain-grads-optˢ-≡ c seed = cong (map opt-gradient) (chain-gradsˢ-≡ c v₀ seed)
