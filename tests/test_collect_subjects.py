"""`training.collect commits --subject-only`: a commit's subject line as a short question."""

from training.collect import subject_question


def test_a_subject_loses_its_type_tag_and_pull_request_number():
    assert subject_question("fix(router)!: handle nested route groups (#123)\n\nThe body.") == \
        "handle nested route groups"
    assert subject_question("Add support for custom encoders") == "Add support for custom encoders"


def test_a_subject_of_fewer_than_three_question_words_asks_nothing():
    assert subject_question("Fix typo") is None
    assert subject_question("chore: v2") is None
    assert subject_question("") is None
