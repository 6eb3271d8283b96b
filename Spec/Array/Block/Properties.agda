{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Blocking, the paper's way (§4.3), and the laws of block/unblock.
--
-- Spec.Array.Block defines block and unblock through the index action
-- (div, mod, combine).  The paper defines them instead by recursion on
-- the s * p ≈ q witness, from reshapes: split/flat at the leaves and, at
-- a product, `rblock`, which swaps the middle two factors of
-- ((s ⊗ p) ⊗ (q ⊗ r)).  Here are rblock (a self-inverse reshape), the
-- reshape-based blockʳ/unblockʳ, proofs that they agree pointwise with
-- block/unblock, and the inverse laws of block and unblock.
------------------------------------------------------------------------
module Spec.Array.Block.Properties where

open import Data.Nat as ℕ using (ℕ)
open import Data.Fin as F using ()
open import Data.Fin.Patterns using (0F; 1F; 2F; 3F)
open import Function using (_∘_)
open import Relation.Binary.PropositionalEquality

open import Spec.Array.Base
open import Spec.Array.Index
open import Spec.Array.Index.Properties using (div-combine; mod-combine; combine-div-mod)
open import Spec.Array.Reshape
open import Spec.Array.Block

private
  variable
    X Y : Set
    s p q r : S

------------------------------------------------------------------------
-- rblock: ((s ⊗ p) ⊗ (q ⊗ r)) to ((s ⊗ q) ⊗ (p ⊗ r))

rblock : Reshape ((s ⊗ p) ⊗ (q ⊗ r)) ((s ⊗ q) ⊗ (p ⊗ r))
rblock = assocl ∙ eq ⊗ (assocr ∙ swap ⊗ eq ∙ assocl) ∙ assocr

-- Its action swaps the middle positions.
rblock-⟨⟩ : (i : P s) (j : P q) (k : P p) (l : P r)
          → ((i ⊗ j) ⊗ (k ⊗ l)) ⟨ rblock ⟩ ≡ (i ⊗ k) ⊗ (j ⊗ l)
rblock-⟨⟩ i j k l = refl

-- It is its own inverse (with p and q exchanged).
rblock-selfinv : (i : P ((s ⊗ p) ⊗ (q ⊗ r)))
               → i ⟨ rev (rblock {s} {p} {q} {r}) ⟩ ≡ i ⟨ rblock {s} {q} {p} {r} ⟩
rblock-selfinv ((i ⊗ j) ⊗ (k ⊗ l)) = refl

rblock-rblock : (i : P ((s ⊗ p) ⊗ (q ⊗ r)))
              → i ⟨ rblock {s} {q} {p} {r} ⟩ ⟨ rblock {s} {p} {q} {r} ⟩ ≡ i
rblock-rblock ((i ⊗ j) ⊗ (k ⊗ l)) = refl

------------------------------------------------------------------------
-- The reshape-based definitions

blockʳ : s * p ≈ q → Ar q X → Ar (s ⊗ p) X
blockʳ ι       = reshape split
blockʳ (l ⊗ r) = reshape rblock ∘ unnest ∘ blockʳ l ∘ map (blockʳ r) ∘ nest

unblockʳ : s * p ≈ q → Ar (s ⊗ p) X → Ar q X
unblockʳ ι       = reshape flat
unblockʳ (l ⊗ r) = unnest ∘ unblockʳ l ∘ map (unblockʳ r) ∘ nest ∘ reshape rblock

-- … agree with block and unblock.
blockʳ-block : (b : s * p ≈ q) (a : Ar q X) → blockʳ b a ≗ block b a
blockʳ-block ι a (ι i ⊗ ι j) = refl
blockʳ-block (l ⊗ r) a ((i ⊗ i′) ⊗ (j ⊗ j′)) =
  trans (cong-app (blockʳ-block l (map (blockʳ r) (nest a)) (i ⊗ j)) (i′ ⊗ j′))
        (blockʳ-block r (nest a (combine l i j)) (i′ ⊗ j′))

unblockʳ-unblock : (b : s * p ≈ q) (a : Ar (s ⊗ p) X) → unblockʳ b a ≗ unblock b a
unblockʳ-unblock ι a (ι k) = refl
unblockʳ-unblock (l ⊗ r) a (k ⊗ k′) =
  trans (cong-app (unblockʳ-unblock l (map (unblockʳ r) (nest (reshape rblock a))) k) k′)
        (unblockʳ-unblock r (nest (reshape rblock a) (div l k ⊗ mod l k)) k′)

private
  -- Blocks of a 4 × 4 matrix are 2 × 2 squares of neighbours: block
  -- (1, 0), inner position (1, 1) is row 3, column 1.
  m44 : Ar (ι (2 ℕ.* 2) ⊗ ι (2 ℕ.* 2)) ℕ
  m44 (ι i ⊗ ι j) = F.toℕ i ℕ.* 4 ℕ.+ F.toℕ j

  b22 : ι 2 ⊗ ι 2 * ι 2 ⊗ ι 2 ≈ ι (2 ℕ.* 2) ⊗ ι (2 ℕ.* 2)
  b22 = ι ⊗ ι

  _ : blockʳ b22 m44 ((ι 1F ⊗ ι 0F) ⊗ (ι 1F ⊗ ι 1F)) ≡ 13
  _ = refl

  _ : unblockʳ b22 (blockʳ b22 m44) (ι 2F ⊗ ι 3F) ≡ 11
  _ = refl

------------------------------------------------------------------------
-- block and unblock are inverse

unblock-block : (b : s * p ≈ q) (a : Ar q X) → unblock b (block b a) ≗ a
unblock-block b a k = cong a (combine-div-mod b k)

block-unblock : (b : s * p ≈ q) (a : Ar (s ⊗ p) X) → block b (unblock b a) ≗ a
block-unblock b a (i ⊗ j) = cong₂ (λ x y → a (x ⊗ y)) (div-combine b i j) (mod-combine b i j)

-- Both commute with map and respect pointwise equality.
block-map : (b : s * p ≈ q) (f : X → Y) (a : Ar q X) → block b (map f a) ≗ map f (block b a)
block-map b f a (i ⊗ j) = refl

unblock-map : (b : s * p ≈ q) (f : X → Y) (a : Ar (s ⊗ p) X)
            → unblock b (map f a) ≗ map f (unblock b a)
unblock-map b f a k = refl

block-cong : (b : s * p ≈ q) {a a′ : Ar q X} → a ≗ a′ → block b a ≗ block b a′
block-cong b e (i ⊗ j) = e (combine b i j)

unblock-cong : (b : s * p ≈ q) {a a′ : Ar (s ⊗ p) X} → a ≗ a′ → unblock b a ≗ unblock b a′
unblock-cong b e k = e (div b k ⊗ mod b k)

-- The reshape-based versions are inverse too.
unblockʳ-blockʳ : (b : s * p ≈ q) (a : Ar q X) → unblockʳ b (blockʳ b a) ≗ a
unblockʳ-blockʳ b a k =
  trans (unblockʳ-unblock b (blockʳ b a) k)
        (trans (blockʳ-block b a (div b k ⊗ mod b k)) (unblock-block b a k))
