"""Stop when decided (issue 41): a registered design (:mod:`.design`), one look at the data so far
(:mod:`.look`, by the rule of :mod:`.rule` on the posteriors of :mod:`.posteriors`), the design's operating
characteristics by simulation (:mod:`.operating` on the data of :mod:`.scenarios`, in words by :mod:`.report`) and
the anytime-valid cross-check (:mod:`.confseq`).  Pure numpy/scipy: nothing here reads or writes MLflow."""

from .confseq import confidence_sequence
from .design import Design, changes, check_unchanged, from_json
from .look import Look, LookRow, look
from .operating import OperatingCharacteristics, operating_characteristics
from .posteriors import EVAL_POSTERIORS, Posterior, posterior_for

__all__ = ["Design", "from_json", "changes", "check_unchanged", "look", "Look", "LookRow",
           "operating_characteristics", "OperatingCharacteristics", "confidence_sequence", "Posterior",
           "posterior_for", "EVAL_POSTERIORS"]
