"""PEF (Gu & Zhou 2020): partition, estimation, fusion around any learner."""
