{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- A tabulated copy of an array, and that it is the array.
--
-- Arrays are functions (Spec.Array.Base), so an executable that reads a
-- layer many times recomputes it each time.  memo a stores a's elements
-- in nested vectors (one per leaf of the shape) and reads them back;
-- under call-by-need (the compiled Main) each element is computed once.
-- memo-≗: memo a is a at every position.
------------------------------------------------------------------------
module Spec.Array.Memo where

open import Data.Vec as Vec using (Vec)
open import Data.Vec.Properties using (lookup∘tabulate)
open import Function using (_∘_)
open import Relation.Binary.PropositionalEquality using (_≡_; trans; cong-app)

open import Spec.Array.Base

private
  variable
    X : Set
    s p : S

memo : Ar s X → Ar s X
memo {s = ι n}   a = look (Vec.tabulate (a ∘ ι))
  where look : Vec _ n → P (ι n) → _
        look v (ι i) = Vec.lookup v i
memo {s = s ⊗ p} a = unnest (memo {s = s} (λ i → memo {s = p} (nest a i)))

memo-≗ : (a : Ar s X) → ∀ i → memo a i ≡ a i
memo-≗ {s = ι n}   a (ι i)   = lookup∘tabulate (a ∘ ι) i
memo-≗ {s = s ⊗ p} a (i ⊗ j) =
  trans (cong-app (memo-≗ {s = s} (λ i → memo {s = p} (nest a i)) i) j)
        (memo-≗ {s = p} (nest a i) j)
