{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The paper's convolutional network (§4.3) in the embedded language E,
-- as a chain of named local bindings (paper §6.3's cnn-chain), with a
-- squared-error loss on top.
--
-- The building blocks conv, mconv and avgp₂ are the E-level versions of
-- those in Spec.CNN.Array (paper §5.2): the same sums over the same
-- positions, so that evaluating the chain in Float gives exactly
-- Spec.CNN.Array.forward (proved for every Scalar: Spec.Proofs.CNN,
-- Spec.Theorems item 13; `Main check-forward` runs both in Float).
--
-- Context (outermost first): target, inp (inputs); k₁ b₁ k₂ b₂ fc b
-- (parameters).  Bindings: c11 c1 s1 c21 c2 s2 r1 r loss, where
--   loss = ½ Σⱼ (r[j] − target[j])²
-- and the reverse pass is seeded with `one` on loss.
------------------------------------------------------------------------
module Spec.Model.CNN where

open import Data.List using (List; []; _∷_)
open import Data.Nat as ℕ using (ℕ)
open import Data.Product using (_,_)
open import Data.String using (String)
open import Data.Unit using (tt)
open import Function using (_$_)

open import Spec.Array.Base using (S; ι; _⊗_; unit; _+_≈_; suc_≈_)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst using (↑_; ↑↑_)
open import Spec.Lang.Chain using (Names; Chain; ε; _▹_)

private
  variable
    Δ           : Ctx
    s p r u w   : S

------------------------------------------------------------------------
-- Building blocks (paper §5.2)

-- Σ over the kernel positions i of the window of f at offset i, scaled
-- by g[i].
conv : E Δ (ar r) → s + p ≈ r → E Δ (ar s) → suc p ≈ u → E Δ (ar u)
conv f sp g su =
  Sum λ i → slide i sp (↑ f) su ⊠ Imapₛ λ _ → sels (↑↑ g) (↑ i)

-- u convolutions with the kernels we[i], each plus its bias b[i].
mconv : s + p ≈ r → (inp : E Δ (ar r)) (we : E Δ (ar (u ⊗ s))) (b : E Δ (ar u))
      → suc p ≈ w → E Δ (ar (u ⊗ w))
mconv sp inp we b su =
  Imap λ i → conv (↑ inp) sp (sel (↑ we) i) su ⊞ Imapₛ λ _ → sels (↑↑ b) (↑ i)

-- The average of every 2×2 block.
avgp₂ : ∀ m n → E Δ (ar (ι (m ℕ.* 2) ⊗ ι (n ℕ.* 2))) → E Δ (ar (ι m ⊗ ι n))
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

c11-e : E Δ (ar Inp) → E Δ (ar K₁) → E Δ (ar B₁) → E Δ (ar C₁)
c11-e inp k₁ b₁ = mconv (ι ⊗ ι) inp k₁ b₁ (ι ⊗ ι)

s1-e : E Δ (ar C₁) → E Δ (ar S₁)
s1-e c₁ = Imap λ i → avgp₂ 12 12 (sel (↑ c₁) i)

c21-e : E Δ (ar S₁) → E Δ (ar K₂) → E Δ (ar B₂) → E Δ (ar C₂)
c21-e s₁ k₂ b₂ = mconv (ι ⊗ (ι ⊗ ι)) s₁ k₂ b₂ (ι ⊗ (ι ⊗ ι))

s2-e : E Δ (ar C₂) → E Δ (ar S₂)
s2-e c₂ = Imap λ i → Imap λ j → avgp₂ 4 4 (sel (sel (↑↑ c₂) (↑ i)) j)

r1-e : E Δ (ar S₂) → E Δ (ar FC) → E Δ (ar B) → E Δ (ar Out)
r1-e s₂ fc b = mconv (ι ⊗ (ι ⊗ (ι ⊗ ι))) s₂ fc b (ι ⊗ (ι ⊗ (ι ⊗ ι)))

-- ½ Σⱼ (r[j] − target[j])²
loss-e : E Δ (ar Out) → E Δ (ar Target) → E Δ (ar unit)
loss-e r target =
  scaledown 2 $ Sum λ j → sels ((↑ r ⊞ minus (↑ target)) ⊠ (↑ r ⊞ minus (↑ target))) j

------------------------------------------------------------------------
-- The chain

Γ : Ctx
Γ = ε ▹ ar Target ▹ ar Inp ▹ ar K₁ ▹ ar B₁ ▹ ar K₂ ▹ ar B₂ ▹ ar FC ▹ ar B

names : Names Γ
names = (((((((tt , "target") , "inp") , "k1") , "b1") , "k2") , "b2") , "fc") , "b"

inputs : List String
inputs = "target" ∷ "inp" ∷ []

-- The full scope: Γ, then d_x and x for every binding x.
Φ : Ctx
Φ = Γ ▹ ar C₁ ▹ ar C₁ ▹ ar C₁ ▹ ar C₁ ▹ ar S₁ ▹ ar S₁ ▹ ar C₂ ▹ ar C₂ ▹ ar C₂ ▹ ar C₂
      ▹ ar S₂ ▹ ar S₂ ▹ ar Out ▹ ar Out ▹ ar Out ▹ ar Out ▹ ar unit ▹ ar unit

-- As in the paper, every binding moves the names of the variables
-- still needed two variables out (↑↑); the new binding is var v₀.
chain : Chain Φ
chain =
  let target = var v₇ ; inp = var v₆ ; k₁ = var v₅ ; b₁ = var v₄
      k₂ = var v₃ ; b₂ = var v₂ ; fc = var v₁ ; b = var v₀
      C₁ = ε {Γ} names ▹ ("c11" , c11-e inp k₁ b₁)
  in let target = ↑↑ target ; k₂ = ↑↑ k₂ ; b₂ = ↑↑ b₂ ; fc = ↑↑ fc ; b = ↑↑ b
         c11 = var v₀
         C₂ = C₁ ▹ ("c1" , logistic c11)
  in let target = ↑↑ target ; k₂ = ↑↑ k₂ ; b₂ = ↑↑ b₂ ; fc = ↑↑ fc ; b = ↑↑ b
         c₁ = var v₀
         C₃ = C₂ ▹ ("s1" , s1-e c₁)
  in let target = ↑↑ target ; k₂ = ↑↑ k₂ ; b₂ = ↑↑ b₂ ; fc = ↑↑ fc ; b = ↑↑ b
         s₁ = var v₀
         C₄ = C₃ ▹ ("c21" , c21-e s₁ k₂ b₂)
  in let target = ↑↑ target ; fc = ↑↑ fc ; b = ↑↑ b
         c21 = var v₀
         C₅ = C₄ ▹ ("c2" , logistic c21)
  in let target = ↑↑ target ; fc = ↑↑ fc ; b = ↑↑ b
         c₂ = var v₀
         C₆ = C₅ ▹ ("s2" , s2-e c₂)
  in let target = ↑↑ target ; fc = ↑↑ fc ; b = ↑↑ b
         s₂ = var v₀
         C₇ = C₆ ▹ ("r1" , r1-e s₂ fc b)
  in let target = ↑↑ target
         r1 = var v₀
         C₈ = C₇ ▹ ("r" , logistic r1)
  in let target = ↑↑ target
         r = var v₀
  in C₈ ▹ ("loss" , loss-e r target)

-- The reverse pass starts from one on loss.
seed : E Φ (ar unit)
seed = one
