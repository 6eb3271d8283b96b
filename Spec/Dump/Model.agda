{-# OPTIONS --safe --without-K #-}
module Spec.Dump.Model where
open import Data.List using (List; []; _∷_)
open import Data.Product using (_×_; _,_)
open import Data.String using (String)
open import Spec.Dump.JSON
models : List (String × JSON)
models = ("dot" , null) ∷ []
