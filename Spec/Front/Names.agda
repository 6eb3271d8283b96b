{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Names at scale: equality in one step and a map from names to
-- numbers whose cost does not grow with the number of names.
--
-- The standard library's String._==_ compares two names as lists of
-- characters through a decision procedure (so that it computes on open
-- terms); the front end only ever compares closed names, and a model
-- of 20,000 bindings compares them tens of millions of times, so it
-- uses the builtin primStringEquality instead.
--
-- `NameMap A` is a trie on the characters of a name: `insert x a m`
-- and `find x m` walk x once, comparing characters with the builtin
-- primCharEquality, so each costs the length of x times the branching
-- (the distinct next characters), independent of how many names m
-- holds.  The front end keeps, for each name in scope, the level of its
-- innermost binding (Spec.Front.Expand) and, for each name defined,
-- its line (Spec.Front.Model).
--
--   find "h1" (insert "h1" 7 (insert "h" 3 empty))  ≡ just 7
--   find "h"  (insert "h1" 7 (insert "h" 3 empty))  ≡ just 3
--   find "h2" (insert "h1" 7 (insert "h" 3 empty))  ≡ nothing
------------------------------------------------------------------------
module Spec.Front.Names where

open import Agda.Builtin.Char using (primCharEquality)
open import Agda.Builtin.String using (primStringEquality)
open import Data.Bool using (Bool; if_then_else_)
open import Data.Char using (Char)
open import Data.List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ)
open import Data.Product using (_×_; _,_)
open import Data.String using (String; toList)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

------------------------------------------------------------------------
-- Equality of names

infix 4 _==_

_==_ : String → String → Bool
_==_ = primStringEquality

------------------------------------------------------------------------
-- A trie of names

data NameMap (A : Set) : Set where
  node : Maybe A → List (Char × NameMap A) → NameMap A

private
  variable
    A : Set

empty : NameMap A
empty = node nothing []

private
  -- the child at c, if there is one
  child : Char → List (Char × NameMap A) → Maybe (NameMap A)
  child c []             = nothing
  child c ((d , m) ∷ ms) = if primCharEquality c d then just m else child c ms

  find′ : List Char → NameMap A → Maybe A
  find′ []       (node a _)  = a
  find′ (c ∷ cs) (node _ ms) with child c ms
  ... | just m  = find′ cs m
  ... | nothing = nothing

  -- the trie holding x ↦ a and what m holds at every other name
  insert′ : List Char → A → NameMap A → NameMap A
  put     : Char → List Char → A → List (Char × NameMap A) → List (Char × NameMap A)

  insert′ []       a (node _ ms) = node (just a) ms
  insert′ (c ∷ cs) a (node b ms) = node b (put c cs a ms)

  put c cs a []             = (c , insert′ cs a empty) ∷ []
  put c cs a ((d , m) ∷ ms) =
    if primCharEquality c d then (d , insert′ cs a m) ∷ ms else (d , m) ∷ put c cs a ms

find : String → NameMap A → Maybe A
find x = find′ (toList x)

insert : String → A → NameMap A → NameMap A
insert x = insert′ (toList x)

------------------------------------------------------------------------
-- Examples

private
  m : NameMap ℕ
  m = insert "h1" 7 (insert "h" 3 empty)

  _ : find "h1" m ≡ just 7
  _ = refl

  _ : find "h" m ≡ just 3
  _ = refl

  _ : find "h2" m ≡ nothing
  _ = refl

  _ : find "h1" (insert "h1" 9 m) ≡ just 9
  _ = refl
