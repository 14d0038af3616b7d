//! The demo menus: a French bistro card in euros and an American kitchen card
//! in dollars, as (category, [(dish, description, price in minor units)]).

/// One category of a menu and its dishes.
pub(crate) struct MenuCategory {
    pub name: &'static str,
    pub dishes: &'static [(&'static str, &'static str, i64)],
}

pub(crate) const FRENCH: &[MenuCategory] = &[
    MenuCategory {
        name: "Entrées",
        dishes: &[
            (
                "Soupe à l'oignon gratinée",
                "Bouillon de bœuf, croûtons, comté",
                950,
            ),
            ("Œufs mayonnaise", "Œufs bio, mayonnaise maison", 750),
            (
                "Terrine de campagne",
                "Cornichons, pain de campagne grillé",
                1050,
            ),
            (
                "Velouté de châtaignes",
                "Crème fouettée, noisettes torréfiées",
                990,
            ),
            (
                "Salade de chèvre chaud",
                "Toasts de chèvre, miel, noix",
                1250,
            ),
            (
                "Escargots de Bourgogne (6)",
                "Beurre persillé à l'ail",
                1400,
            ),
        ],
    },
    MenuCategory {
        name: "Plats",
        dishes: &[
            ("Bœuf bourguignon", "Carottes, lardons, purée maison", 2350),
            ("Confit de canard", "Pommes sarladaises, salade verte", 2450),
            ("Steak frites", "Entrecôte 250 g, sauce au poivre", 2690),
            (
                "Blanquette de veau",
                "Riz pilaf, champignons de Paris",
                2290,
            ),
            (
                "Poulet rôti aux herbes",
                "Jus corsé, gratin dauphinois",
                1990,
            ),
            ("Dos de cabillaud", "Beurre blanc, poireaux fondants", 2390),
            ("Risotto aux cèpes", "Parmesan, huile de truffe", 2150),
            ("Croque-monsieur", "Jambon blanc, béchamel, salade", 1450),
        ],
    },
    MenuCategory {
        name: "Fromages",
        dishes: &[
            (
                "Assiette de trois fromages",
                "Comté, brie de Meaux, bleu d'Auvergne",
                1100,
            ),
            ("Camembert rôti", "Miel de châtaignier, pain grillé", 1350),
            ("Fromage blanc", "Crème, coulis de fruits rouges", 690),
        ],
    },
    MenuCategory {
        name: "Desserts",
        dishes: &[
            ("Crème brûlée à la vanille", "Vanille de Madagascar", 850),
            ("Tarte Tatin", "Crème fraîche d'Isigny", 950),
            ("Mousse au chocolat", "Chocolat noir 70 %", 800),
            ("Profiteroles", "Glace vanille, sauce chocolat chaude", 1050),
            ("Île flottante", "Crème anglaise, pralines roses", 790),
            ("Mont-blanc", "Crème de marrons, meringue, chantilly", 1150),
        ],
    },
    MenuCategory {
        name: "Boissons",
        dishes: &[
            ("Verre de bordeaux", "Rouge, 12 cl", 750),
            ("Verre de chablis", "Blanc, 12 cl", 850),
            ("Cidre brut", "Bouteille 33 cl", 650),
            ("Limonade artisanale", "33 cl", 450),
            ("Eau minérale", "Bouteille 50 cl", 350),
            ("Café", "Expresso", 250),
            ("Thé", "Sélection de la maison", 400),
        ],
    },
];

pub(crate) const AMERICAN: &[MenuCategory] = &[
    MenuCategory {
        name: "Starters",
        dishes: &[
            ("New England clam chowder", "Cup, oyster crackers", 895),
            ("Buffalo wings (8)", "Blue cheese dip, celery", 1395),
            ("Crispy calamari", "Lemon aioli, marinara", 1450),
            ("Loaded potato skins", "Cheddar, bacon, sour cream", 1095),
            ("Caesar salad", "Romaine, parmesan, garlic croutons", 1195),
            ("Lobster bisque", "Sherry, chives", 1295),
        ],
    },
    MenuCategory {
        name: "Mains",
        dishes: &[
            (
                "Lobster roll",
                "Maine lobster, butter, brioche roll, fries",
                3295,
            ),
            (
                "Classic cheeseburger",
                "Aged cheddar, pickles, brioche bun, fries",
                1795,
            ),
            ("Fish and chips", "Beer-battered cod, tartar sauce", 2195),
            ("BBQ pulled pork sandwich", "Coleslaw, pickles, fries", 1695),
            ("Grilled salmon", "Lemon butter, asparagus", 2695),
            ("Mac and cheese", "Four cheeses, breadcrumb crust", 1595),
            ("Chicken pot pie", "Flaky crust, garden vegetables", 1895),
            (
                "NY strip steak",
                "12 oz, mashed potatoes, green beans",
                3495,
            ),
        ],
    },
    MenuCategory {
        name: "Sides",
        dishes: &[
            ("French fries", "Sea salt", 595),
            ("Sweet potato fries", "Chipotle mayo", 695),
            ("Onion rings", "Ranch dip", 695),
            ("Coleslaw", "Creamy, house-made", 495),
        ],
    },
    MenuCategory {
        name: "Desserts",
        dishes: &[
            ("New York cheesecake", "Strawberry compote", 950),
            ("Apple pie à la mode", "Vanilla ice cream", 895),
            ("Boston cream pie", "Custard, chocolate glaze", 925),
            ("Chocolate brownie sundae", "Hot fudge, whipped cream", 995),
            ("Key lime pie", "Graham cracker crust", 895),
        ],
    },
    MenuCategory {
        name: "Drinks",
        dishes: &[
            ("Craft IPA", "Draft, 16 oz", 850),
            ("House lemonade", "Fresh squeezed", 495),
            ("Iced tea", "Unsweetened", 395),
            ("Root beer float", "Vanilla ice cream", 695),
            ("Cold brew coffee", "12 oz", 495),
            ("Sparkling water", "500 ml", 395),
        ],
    },
];
