{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Blocking: an array of shape q with s * p ≈ q seen as an s-array of
-- p-shaped blocks of neighbouring elements, and back.  Defined through
-- the index action of Spec.Array.Index (div, mod, combine); the
-- reshape-based definition (rblock) and the laws relating the two live
-- in Spec.Array.Block.Properties.
------------------------------------------------------------------------
module Spec.Array.Block where

open import Spec.Array.Base
open import Spec.Array.Index

private
  variable
    X : Set
    s p q : S

block : s * p ≈ q → Ar q X → Ar (s ⊗ p) X
block m a (i ⊗ j) = a (combine m i j)

unblock : s * p ≈ q → Ar (s ⊗ p) X → Ar q X
unblock m a k = a (div m k ⊗ mod m k)
