"""The teaching kit: what turns the BERT library into a course. It reads the library; the library
never imports it (a test checks the direction).

- ``lessons``: the course map (the README's table and notebook 00's) and the ``minibert course``
  command that opens the notebooks or writes their student edition;
- ``figures``: the lessons' diagrams and plots; ``viz``: attention maps, head measures and
  training curves (also ``mb.viz``); ``explorer``: the attention explorer (ipywidgets);
- ``word_senses``: how a word's vector depends on its sentence, layer by layer (lessons 0 and 3);
- ``baselines``: the trivial baselines the lessons measure models against (n-gram table, topic
  rule, bag of words, opinion words, capitalisation rules);
- ``exercises``: the notebooks' checkers, one module per lesson, each returning a ``Result``
  (passed, message);
- ``assignments``: graded assignments (their files in ``assignment_files/``) and the grader;
  ``grading_worker``: the program that runs a submission for the grader (no minibert import: it
  runs in the sandbox), beside ``assignments`` and ``exercises``, which both import it;
- ``student_edition``: the notebooks without the exercises' solutions (with nbgrader);
- ``slides``: the lessons' slide types (RISE's cell metadata) and their offline reveal.js decks;
  ``offline``: what the site and the decks need to work with no network (MathJax, a link check);
- ``d2l_bridge``: d2l's BERT chapters loaded offline beside minibert (the appendix notebook).

Each module is imported the first time it is used: ``minibert.teaching.exercises``.
"""

from __future__ import annotations

from minibert.utils import lazy_submodules

__all__ = [
    "assignments",
    "baselines",
    "d2l_bridge",
    "exercises",
    "explorer",
    "figures",
    "grading_worker",
    "lessons",
    "offline",
    "slides",
    "student_edition",
    "viz",
    "word_senses",
]


__getattr__, __dir__ = lazy_submodules(__name__, __all__)
