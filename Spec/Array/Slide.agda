{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Sliding windows.  `slide i` reads the (p + 1)-shaped window at offset
-- i of an (s + p)-shaped array; `backslide i` is its section: it embeds
-- a (p + 1)-shaped array at offset i into an (s + p)-shaped one filled
-- elsewhere with a default element.
------------------------------------------------------------------------
module Spec.Array.Slide where

open import Data.Product using (_,_)
open import Relation.Nullary using (yes; no)

open import Spec.Array.Base
open import Spec.Array.Index

private
  variable
    X : Set
    s p r u : S

slide : P s → s + p ≈ r → Ar r X → suc p ≈ u → Ar u X
slide i sp a su j = a ((i ⊕ₚ j) su sp)

backslide : P s → Ar u X → suc p ≈ u → (def : X) → s + p ≈ r → Ar r X
backslide i a su def sp j with (j ⊖ₚ i) su sp
... | yes (k , _) = a k
... | no  _       = def
