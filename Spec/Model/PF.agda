{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The shipped chains are placeholder-free: each proof is found by
-- running the decision procedure pf? (Spec.Lang.Chain.Clean) when this
-- module is checked.  (A model file gets its proof the same way, from
-- the elaborator: Spec.Front.Model, field `pf`.)
------------------------------------------------------------------------
module Spec.Model.PF where

open import Data.Maybe using (from-just)

open import Spec.Lang.Chain.Clean using (PF; pf?)
import Spec.Model.CNN as CNN
import Spec.Model.Dot as Dot
import Spec.Model.ChainExample as ChainExample
import Spec.Model.Ops as Ops

cnn-pf : PF CNN.chain
cnn-pf = from-just (pf? CNN.chain)

dot-pf : PF Dot.chain
dot-pf = from-just (pf? Dot.chain)

chain-pf : PF ChainExample.chain
chain-pf = from-just (pf? ChainExample.chain)

ops-pf : PF Ops.chain
ops-pf = from-just (pf? Ops.chain)
