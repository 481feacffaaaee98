"""The Recommender's own guarantees, against hand-worked expectations rather than against itself."""

from awrsr.infer import Recommender


def test_items_seen_before_the_window_are_never_recommended(trained_run):
    rec = Recommender.load(trained_run.run_dir)  # max_len 20, items 1..50
    history = list(range(1, 31))  # 30 distinct items: the model reads only the last 20
    top = rec.recommend(history, k=50)
    # every item of the history is filtered, also the 10 older than the window: 20 are left
    assert len(top) == 20 and {r.item for r in top} == set(range(31, 51))
