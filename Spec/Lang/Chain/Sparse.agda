{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The reverse pass of a chain (Spec.Lang.Chain.grads) with the sparse
-- environment of Spec.Lang.AD.Sparse: what Main prints.
--
-- grads walks the bindings last first in the full scope Φ; reading the
-- entry of the binding k places in costs k cells of a dense
-- environment, and adding to a parameter's entry the length of Φ, so a
-- chain of n bindings cost Θ(n²).  gradsˢ does the same steps on the
-- trie: O(d log n) per variable occurrence under d binders, so the
-- pass is O(N d log n) for a chain of N nodes.
--
--   before: grads (c ▹ (h₂ , relu h₁ + x)) o δ   walks δ to h₂'s entry
--           (2·k cells deep) and to x's (the length of Φ)
--   after:  gradsˢ n (c ▹ (h₂ , relu h₁ + x)) o t   reads and adds at
--           the three levels, O(log n) each
--
-- Spec.Proofs.Chain.Sparse proves
-- chain-grads-optˢ c seed ≡ chain-grads-opt c seed.
------------------------------------------------------------------------
module Spec.Lang.Chain.Sparse where

open import Data.List using (List; []; _∷_; _++_; [_]; map)
open import Data.Nat using (ℕ)
open import Data.Product using (_,_)

open import Spec.Array.Base using (S)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (ren)
open import Spec.Lang.Shift using (Offset; shift; off₀; off₁; off₂)
open import Spec.Lang.Chain using (Chain; ε; _▹_; Names; Gradient; gradient; d_; opt-gradient)
open import Spec.Lang.AD.Sparse using (Sparse; leaf; len; key; get; ∇ˢ)

private
  variable
    Δ Φ : Ctx
    p   : S

-- n is len Φ throughout
base-gradsˢ : ℕ → Names Δ → Offset Δ Φ → Sparse Φ → List (Gradient Φ)
base-gradsˢ {ε}          n _        o t = []
base-gradsˢ {Δ ▹ ar s}   n (ns , x) o t =
  base-gradsˢ n ns (off₁ o) t ++ [ gradient (d_ x) x s (get (key n (shift o v₀)) s t) ]
base-gradsˢ {Δ ▹ ix _}   n (ns , _) o t = base-gradsˢ n ns (off₁ o) t

gradsˢ : ℕ → Chain Δ → Offset Δ Φ → Sparse Φ → List (Gradient Φ)
gradsˢ n (ε ns)        o t = base-gradsˢ n ns o t
gradsˢ n (_▹_ {p = q} c (x , e)) o t =
  gradient (d_ x) x q (get (key n (shift o v₀)) q t)
  ∷ gradsˢ n c (off₂ o) (∇ˢ n (ren (shift (off₂ o)) e) (var (shift o v₁)) t)

chain-gradsˢ : Chain Φ → ar p ∈ Φ → E Φ (ar p) → List (Gradient Φ)
chain-gradsˢ {Φ = Φ} c y seed = gradsˢ (len Φ) c off₀ (∇ˢ (len Φ) (var y) seed leaf)

chain-grads-optˢ : ∀ {Δ} → Chain (Δ ▹ ar p ▹ ar p) → E (Δ ▹ ar p ▹ ar p) (ar p)
                 → List (Gradient (Δ ▹ ar p ▹ ar p))
chain-grads-optˢ c seed = map opt-gradient (chain-gradsˢ c v₀ seed)
