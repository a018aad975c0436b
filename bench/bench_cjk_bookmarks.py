"""Routing on synthetic Chinese and Japanese chats: word-sized keywords or clauses?

Eight facts, each planted among small talk in a page of its own (fixed_10, one page
resident, the library's defaults otherwise), one question per fact; routing top-1 as
the simulation defines it (BM25 of the question over the evicted pages' bookmarks,
``copage.eval.routing.route``), averaged over 20 shuffles. Three sets: ``zh-dev``
(looked at while building the CJK keyword rule), ``zh-heldout`` and ``ja-heldout``
(written before the rule was measured on them). Chance is about 1/8.

    python bench/bench_cjk_bookmarks.py [-v]   # -v: print seed 0's bookmarks of each set
"""

from __future__ import annotations

import random
import sys

from copage import PagedMemory
from copage.eval.routing import route

ZH_FACTS = [
    ("我下周二要去看牙医，约的是奥卡福医生，上午九点。", "我的牙医预约是什么时候？"),
    ("我们六月要去里斯本旅行，和我姐姐安娜一起。", "我们六月去哪里旅行？"),
    ("我对花生过敏，吃了会很严重。", "我对什么过敏？"),
    ("我的新车是一辆红色的丰田卡罗拉。", "我的新车是什么颜色的？"),
    ("我女儿小雨下个月参加钢琴比赛。", "小雨参加什么比赛？"),
    ("公司把年会安排在杭州西湖边的酒店。", "年会在哪里举行？"),
    ("我最近在学做川菜，特别喜欢麻婆豆腐。", "我在学做什么菜？"),
    ("我的护照下个月就过期了，得去出入境管理局续办。", "我的护照什么时候过期？"),
]
ZH_FILLER = [
    "今天天气不错，阳光很好。", "是啊，适合出去走走。", "我早上喝了一杯咖啡。",
    "咖啡喝多了晚上会睡不着。", "最近工作有点忙。", "注意休息，别太累了。",
    "周末打算在家看电视剧。", "有什么好看的推荐吗？", "楼下新开了一家面包店。",
    "他们的牛角包味道怎么样？", "我昨天晚上跑步了五公里。", "坚持运动对身体好。",
    "地铁今天特别挤。", "早高峰总是这样。", "我养的猫今天很调皮。", "猫咪都是这样的。",
]

ZH2_FACTS = [
    ("我儿子明明下周六过生日，想要一个乐高城堡。", "明明的生日礼物想要什么？"),
    ("我在北京协和医院做体检，结果下周出来。", "我在哪家医院体检？"),
    ("我老公换了新工作，在一家人工智能创业公司。", "我老公的新工作在什么公司？"),
    ("我们家的洗衣机坏了，海尔的维修师傅明天上门。", "洗衣机什么时候修？"),
    ("我报名了上海马拉松，比赛在十一月。", "我报名了什么比赛？"),
    ("我奶奶住在成都，春节我们回去看她。", "奶奶住在哪个城市？"),
    ("我的猫叫豆豆，是一只英国短毛猫。", "我的猫是什么品种？"),
    ("我准备考雅思，目标是七分。", "我准备考什么考试？"),
]
ZH2_FILLER = [
    "晚上吃什么好呢？", "随便吧，你决定。", "外面下雨了，记得带伞。", "谢谢提醒。",
    "这首歌挺好听的。", "我也经常听。", "今天加班到八点。", "辛苦了，早点休息。",
    "周末去爬山吗？", "好啊，看天气吧。", "手机快没电了。", "充电宝在抽屉里。",
    "这部电影评分很高。", "有空一起去看。", "最近睡眠不太好。", "睡前少看手机。",
]
JA_FACTS = [
    ("来週の火曜日に歯医者の予約があります、オカフォー先生です。", "歯医者の予約はいつですか？"),
    ("六月に姉のアナとリスボンへ旅行します。", "六月にどこへ旅行しますか？"),
    ("私はピーナッツアレルギーなので気をつけてください。", "私は何のアレルギーですか？"),
    ("新しい車は赤いトヨタカローラです。", "新しい車は何色ですか？"),
    ("娘のユキは来月ピアノコンクールに出ます。", "ユキは何のコンクールに出ますか？"),
    ("会社の忘年会は京都の旅館で開かれます。", "忘年会はどこで開かれますか？"),
    ("最近は四川料理を習っていて、麻婆豆腐が好きです。", "最近何の料理を習っていますか？"),
    ("パスポートが来月切れるので、更新しなければなりません。", "パスポートはいつ切れますか？"),
]
JA_FILLER = [
    "今日はいい天気ですね。", "そうですね、散歩日和です。", "朝コーヒーを飲みました。",
    "飲みすぎると眠れなくなりますよ。", "最近仕事が忙しいです。", "無理しないでくださいね。",
    "週末は家でドラマを見ます。", "おすすめはありますか？", "近所に新しいパン屋ができました。",
    "クロワッサンはおいしいですか？", "昨日は五キロ走りました。", "運動は体にいいですね。",
    "電車がとても混んでいました。", "朝のラッシュはいつもそうです。", "猫がいたずらばかりします。", "猫はそういうものです。",
]


def run(facts_in: list[tuple[str, str]], filler: list[str], seed: int,
        verbose: bool = False) -> float:
    """Routing top-1 of one shuffle."""
    rng = random.Random(seed)
    facts = list(facts_in)
    rng.shuffle(facts)
    mem = PagedMemory(resident_pages=1)
    where: dict[str, int] = {}
    turn = 0
    for fact, q in facts:
        lines = [rng.choice(filler) for _ in range(9)]
        pos = rng.randrange(0, 9, 2)  # a user turn
        lines.insert(pos, fact)
        for t in lines[:10]:
            mem.add("user" if turn % 2 == 0 else "assistant", t)
            turn += 1
        where[q] = len(mem.pages)  # page index (1-based id) that holds it
    for _ in range(10):
        mem.add("user" if turn % 2 == 0 else "assistant", rng.choice(filler))
        turn += 1
    books = mem.bookmarks()
    evicted = [pid for pid in books if pid not in set(mem.resident)]
    total, n = 0.0, 0
    for q, page in where.items():
        pid = f"p{page}"
        if pid not in evicted:
            continue
        texts = [books[p].text for p in evicted]
        total += route(q, texts, [evicted.index(pid)]).credit
        n += 1
    if verbose:
        print(f"{n} questions over {len(evicted)} evicted pages:",
              " ".join(books[p].text for p in evicted))
    return total / n


def main() -> None:
    sets = {"zh-dev": (ZH_FACTS, ZH_FILLER), "zh-heldout": (ZH2_FACTS, ZH2_FILLER),
            "ja-heldout": (JA_FACTS, JA_FILLER)}
    for name, (facts, filler) in sets.items():
        scores = [run(facts, filler, s, verbose="-v" in sys.argv and s == 0) for s in range(20)]
        print(f"{name}: routing top-1 over 20 seeds: {sum(scores) / len(scores):.3f}")


if __name__ == "__main__":
    main()
