"""The whole suite runs with NaN-poisoned kernel outputs, so an unwritten element fails a comparison instead of
passing as stale memory (a debugging switch users turn on with debug=True or TILEGEMM_POISON=1)."""
import tilegemm as tg

tg.set_debug(poison_outputs=True)
