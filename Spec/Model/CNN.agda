{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The paper's convolutional network (§4.3) in the embedded language E,
-- as a chain of named local bindings (paper §6.3's cnn-chain), with a
-- squared-error loss on top.
--
-- The building blocks conv, mconv and avgp₂ are the E-level versions of
-- those in Spec.CNN.Array (paper §5.2): the same sums over the same
-- positions, so that evaluating the chain in Float gives exactly
-- Spec.CNN.Array.forward (checked by `Main check-forward`).
--
-- Context (outermost first): target, inp (inputs); k₁ b₁ k₂ b₂ fc b
-- (parameters).  Bindings: c11 c1 s1 c21 c2 s2 r1 r loss, where
--   loss = ½ Σⱼ (r[j] − target[j])²
-- and the reverse pass is seeded with `one` on loss.
------------------------------------------------------------------------
module Spec.Model.CNN where

open import Data.Nat as ℕ using (ℕ)
open import Function using (_$_)

open import Spec.Array.Base using (S; ι; _⊗_; unit; _+_≈_; suc_≈_)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_; ↑↑_)

private
  variable
    Γ           : Ctx
    s p r u w   : S

------------------------------------------------------------------------
-- Building blocks (paper §5.2)

-- Σ over the kernel positions i of the window of f at offset i, scaled
-- by g[i].
conv : E Γ (ar r) → s + p ≈ r → E Γ (ar s) → suc p ≈ u → E Γ (ar u)
conv f sp g su =
  Sum λ i → slide i sp (↑ f) su ⊠ Imapₛ λ _ → sels (↑↑ g) (↑ i)

-- u convolutions with the kernels we[i], each plus its bias b[i].
mconv : s + p ≈ r → (inp : E Γ (ar r)) (we : E Γ (ar (u ⊗ s))) (b : E Γ (ar u))
      → suc p ≈ w → E Γ (ar (u ⊗ w))
mconv sp inp we b su =
  Imap λ i → conv (↑ inp) sp (sel (↑ we) i) su ⊞ Imapₛ λ _ → sels (↑↑ b) (↑ i)

-- The average of every 2×2 block.
avgp₂ : ∀ m n → E Γ (ar (ι (m ℕ.* 2) ⊗ ι (n ℕ.* 2))) → E Γ (ar (ι m ⊗ ι n))
avgp₂ m n a =
  Imapₛ λ i → scaledown 4 $ Sum λ j → sels (selb (ι ⊗ ι) (↑↑ a) (↑ i)) j

------------------------------------------------------------------------
-- Shapes (as in Spec.CNN.Array)

Target Inp K₁ B₁ K₂ B₂ FC B C₁ S₁ C₂ S₂ Out : S
Target = ι 10 ⊗ (ι 1 ⊗ (ι 1 ⊗ (ι 1 ⊗ ι 1)))
Inp    = ι 28 ⊗ ι 28
K₁     = ι 6 ⊗ (ι 5 ⊗ ι 5)
B₁     = ι 6
K₂     = ι 12 ⊗ (ι 6 ⊗ (ι 5 ⊗ ι 5))
B₂     = ι 12
FC     = ι 10 ⊗ (ι 12 ⊗ (ι 1 ⊗ (ι 4 ⊗ ι 4)))
B      = ι 10
C₁     = ι 6 ⊗ (ι 24 ⊗ ι 24)
S₁     = ι 6 ⊗ (ι 12 ⊗ ι 12)
C₂     = ι 12 ⊗ (ι 1 ⊗ (ι 8 ⊗ ι 8))
S₂     = ι 12 ⊗ (ι 1 ⊗ (ι 4 ⊗ ι 4))
Out    = ι 10 ⊗ (ι 1 ⊗ (ι 1 ⊗ (ι 1 ⊗ ι 1)))

------------------------------------------------------------------------
-- The layers, as functions of the E expressions they read

c11-e : E Γ (ar Inp) → E Γ (ar K₁) → E Γ (ar B₁) → E Γ (ar C₁)
c11-e inp k₁ b₁ = mconv (ι ⊗ ι) inp k₁ b₁ (ι ⊗ ι)

s1-e : E Γ (ar C₁) → E Γ (ar S₁)
s1-e c₁ = Imap λ i → avgp₂ 12 12 (sel (↑ c₁) i)

c21-e : E Γ (ar S₁) → E Γ (ar K₂) → E Γ (ar B₂) → E Γ (ar C₂)
c21-e s₁ k₂ b₂ = mconv (ι ⊗ (ι ⊗ ι)) s₁ k₂ b₂ (ι ⊗ (ι ⊗ ι))

s2-e : E Γ (ar C₂) → E Γ (ar S₂)
s2-e c₂ = Imap λ i → Imap λ j → avgp₂ 4 4 (sel (sel (↑↑ c₂) (↑ i)) j)

r1-e : E Γ (ar S₂) → E Γ (ar FC) → E Γ (ar B) → E Γ (ar Out)
r1-e s₂ fc b = mconv (ι ⊗ (ι ⊗ (ι ⊗ ι))) s₂ fc b (ι ⊗ (ι ⊗ (ι ⊗ ι)))

-- ½ Σⱼ (r[j] − target[j])²
loss-e : E Γ (ar Out) → E Γ (ar Target) → E Γ (ar unit)
loss-e r target =
  scaledown 2 $ Sum λ j → sels ((↑ r ⊞ minus (↑ target)) ⊠ (↑ r ⊞ minus (↑ target))) j
